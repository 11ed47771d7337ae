"""The app's transcript pane type: one place says which transcript the screen builds.

The screen, the controllers and the key tables name `Transcript`; it is `LinesTranscript`
(`transcript_lines.py`, the Line-API transcript: the one transcript of the app).
"""

from __future__ import annotations

from hermes_tui.app.widgets.transcript_lines import LinesTranscript

Transcript = LinesTranscript

__all__ = ["Transcript"]
