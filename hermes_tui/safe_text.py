"""The one sanitizer: store text made inert before it reaches a terminal, a file or a widget.

Agent content is whatever the agent read (web pages, tool output, other people's messages), so
it may carry terminal escape sequences (OSC 52 sets the clipboard, OSC 8 makes links, CSI 2J
clears the screen), C1 controls that some terminals read as CSI, carriage returns that overwrite
a line, and bidi overrides that reorder what the reader sees. Every path that shows store text —
the browser's widgets, every CLI output, Markdown exports — calls `inert` (or `one_line`), so no
byte sequence in a row can drive the terminal. Controls are *shown*, not dropped: C0 and DEL
become Unicode control pictures (ESC → ␛), C1 and bidi controls a visible ``⟨U+202E⟩`` tag, so a
reader sees that something was there.

Knows neither SQLite nor Textual (only Rich's cell widths): the store, the app and the CLI may
all import it.
"""

from __future__ import annotations

import re
from typing import Any

from rich.cells import cell_len, set_cell_size

#: Bidi embedding/override/isolate controls (and the marks), shown as tags, never obeyed.
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")

# C0 except \t and \n, DEL, C1, bidi controls; plus a lone \r (CRLF is folded to \n first).
_UNSAFE_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f" + "".join(sorted(BIDI_CONTROLS)) + "]")
_UNSAFE_ONE_LINE_RE = re.compile("[\x00-\x1f\x7f-\x9f" + "".join(sorted(BIDI_CONTROLS)) + "]")
_WS_RE = re.compile(r"\s+")


def _picture(ch: str) -> str:
    code = ord(ch)
    if code < 0x20:
        return chr(0x2400 + code)  # ␀ … ␟ (ESC → ␛)
    if code == 0x7F:
        return "\u2421"  # ␡
    return f"⟨U+{code:04X}⟩"


def _replace(match: re.Match[str]) -> str:
    return _picture(match.group(0))


def as_text(value: Any) -> str:
    """Any stored value as a str: bytes decoded (a marker when they are not UTF-8), None → ''."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return f"[binary: {len(raw):,} bytes] " + raw.decode("utf-8", errors="replace")
    return str(value)


def inert(value: Any, *, newlines: bool = True) -> str:
    """`value` as text that cannot drive a terminal: tabs and (if `newlines`) newlines kept,
    CRLF folded to a newline, every other control character and bidi control shown visibly.

    Idempotent: `inert(inert(x)) == inert(x)`.
    """
    text = as_text(value)
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    if not newlines:
        text = text.replace("\n", " ").replace("\t", " ")
    if text.isascii() and text.isprintable():
        return text
    return _UNSAFE_RE.sub(_replace, text)


def one_line(value: Any, width: int | None = None) -> str:
    """Inert text on one line: whitespace runs (newlines, tabs) folded to one space, controls
    shown visibly, cut to `width` characters with an ellipsis."""
    text = as_text(value)
    if not text:
        return ""
    text = _WS_RE.sub(" ", text).strip()
    if not (text.isascii() and text.isprintable()):
        text = _UNSAFE_ONE_LINE_RE.sub(_replace, text)
    if width is not None and len(text) > width:
        return text[: max(0, width - 1)] + "…"
    return text


def is_inert(text: str) -> bool:
    """True when `text` holds no control character but tab/newline and no bidi control."""
    return _UNSAFE_RE.search(text) is None and "\r" not in text


def cell_width(text: str) -> int:
    """Terminal cells `text` takes (CJK and other wide characters count 2): Rich's own measure,
    so CLI tables line up exactly as the browser's Rich-rendered cells do."""
    return cell_len(text)


def fit_cells(text: str, width: int) -> str:
    """Cut `text` to at most `width` cells (an ellipsis when cut) and pad it to exactly `width`."""
    if cell_len(text) <= width:
        return text + " " * (width - cell_len(text))
    if width <= 0:
        return ""
    cut = set_cell_size(text, width - 1)
    if not text.startswith(cut):  # a wide character was split: Rich padded its half with a space
        return cut[:-1] + "… "
    return cut + "…"
