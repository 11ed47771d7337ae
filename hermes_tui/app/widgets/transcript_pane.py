"""The app's transcript pane type: one place says which transcript the screen builds.

The screen, the controllers and the key tables name `Transcript`; it is `LinesTranscript`
(`transcript_lines.py`, the Line-API transcript), which keeps `TranscriptView`'s names (its
messages, `show`, `append_items`, find, ...). Pointing it back at `TranscriptView` is one line.
"""

from __future__ import annotations

from hermes_tui.app.widgets.transcript_lines import LinesTranscript

Transcript = LinesTranscript

__all__ = ["Transcript"]
