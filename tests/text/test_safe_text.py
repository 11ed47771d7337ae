"""The one sanitizer: no byte sequence from the store survives as a terminal control."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from hermes_tui.safe_text import BIDI_CONTROLS, as_text, cell_width, fit_cells, inert, is_inert, one_line

PAYLOADS = [
    "\x1b]52;c;aGVsbG8=\x07",  # OSC 52: set the clipboard
    "\x1b[2J\x1b[H",  # clear screen
    "\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\",  # OSC 8 hyperlink
    "\x1b]0;pwned\x07",  # window title
    "\x9b31m",  # C1 CSI
    "abc\rXYZ",  # overwrite the line
    "user\u202eexe.txt",  # bidi override
]


def _no_controls(text: str) -> None:
    for ch in text:
        code = ord(ch)
        assert ch in "\n\t" or not (code < 0x20 or 0x7F <= code <= 0x9F), repr(text)
        assert ch not in BIDI_CONTROLS, repr(text)


def test_payloads_become_visible() -> None:
    for payload in PAYLOADS:
        out = inert(payload)
        _no_controls(out)
        assert is_inert(out)
    assert inert("\x1b]52;c;x\x07") == "␛]52;c;x␇"
    assert inert("a\u202eb") == "a⟨U+202E⟩b"
    assert inert("a\r\nb\rc") == "a\nb␍c"


@given(st.text())
def test_inert_never_leaves_a_control(text: str) -> None:
    out = inert(text)
    _no_controls(out)
    assert inert(out) == out
    _no_controls(one_line(text))
    assert "\n" not in one_line(text)


@given(st.binary())
def test_any_bytes_are_inert(raw: bytes) -> None:
    _no_controls(inert(raw))
    _no_controls(one_line(raw, 40))


def test_plain_text_unchanged() -> None:
    text = "deploy 部署 ok\n\tindented"
    assert inert(text) == text
    assert one_line("a\n b\t\tc") == "a b c"
    assert one_line("abcdef", 4) == "abc…"


def test_bytes_and_none() -> None:
    assert as_text(None) == ""
    assert as_text("é".encode()) == "é"
    assert as_text(b"\xff\xfe").startswith("[binary: 2 bytes]")


def test_cell_width_and_fit() -> None:
    assert cell_width("部署") == 4
    assert fit_cells("部署abc", 4) == "部… "
    assert cell_width(fit_cells("数据库连接池", 7)) == 7
    assert fit_cells("ab", 4) == "ab  "


@given(st.text(alphabet=st.sampled_from("ab部署数据库 é한국"), max_size=30), st.integers(1, 20))
def test_fit_cells_is_exactly_the_width(text: str, width: int) -> None:
    out = fit_cells(text, width)
    assert cell_width(out) == width
    assert out.rstrip(" …") == "" or text.startswith(out.rstrip(" …")) or text.startswith(out.rstrip(" "))
