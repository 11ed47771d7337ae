"""A session (or a compression chain) as one self-contained HTML file, safe to open and to send.

Read like the transcript: the session's metadata and lineage at the top, then each message with
its role and time, Markdown rendered (markdown-it-py, which Rich already brings), code
highlighted (Pygments), tool calls, tool results and reasoning folded in `<details>`.

Safe because nothing from the store is ever markup:
- every store string goes through the one sanitizer (`safe_text.inert`: control and bidi
  characters shown as visible tags) and then is escaped by `markupsafe`; Markdown is parsed with
  raw HTML off, its tokens made inert after parsing (character references such as `&#x202E;`
  are decoded by the parser) and its text, code and attributes written through `markupsafe`;
- no script anywhere, and a `Content-Security-Policy` meta forbidding scripts and every remote
  resource (`default-src 'none'`; only the inline style is allowed); images from the store are
  never fetched (an image is shown as its alt text and address), links keep only http(s)/mailto
  addresses and open nothing by themselves;
- with `redact`, every string first goes through `hermes_tui.redact`.
Knows nothing of Textual nor SQL: it formats the dicts `export_session(…, display=True)` returns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, cast
from urllib.parse import urlsplit

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markupsafe import Markup, escape
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import JsonLexer, get_lexer_by_name
from pygments.util import ClassNotFound

from hermes_tui.exporting import TOOL_RESULT_LIMIT, iso, pretty_json, shown_tool_calls
from hermes_tui.formatting import row_cost
from hermes_tui.redact import redact as redact_text
from hermes_tui.safe_text import as_text, inert, one_line
from hermes_tui.state import content_text, tool_call_fields

#: No script, no remote anything: only the document's own inline style.
CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; font-src 'none'; "
    "connect-src 'none'; media-src 'none'; object-src 'none'; frame-src 'none'; "
    "base-uri 'none'; form-action 'none'"
)
#: Link targets kept as links (anything else — javascript:, data:, file:, relative — is text).
LINK_SCHEMES = frozenset({"http", "https", "mailto"})
#: Fence languages longer than this are no language (a lexer name is short).
_LANG_MAX = 40
_HL = HtmlFormatter(cssclass="hl", nowrap=False)

_STYLE = """
:root { color-scheme: light dark; --fg:#1d1f21; --bg:#fdfdfc; --mute:#6a6f75; --line:#d8dbde;
  --user:#e8f1fb; --assistant:#f4f4f2; --tool:#f6f1e7; --system:#f1eef8; }
@media (prefers-color-scheme: dark) { :root { --fg:#e6e6e3; --bg:#17181a; --mute:#9aa0a6;
  --line:#33363a; --user:#1c2a3a; --assistant:#202124; --tool:#2a2419; --system:#241f30; } }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg);
  background: var(--bg); max-width: 56rem; margin: 2rem auto; padding: 0 1rem; }
h1 { font-size: 1.5rem; margin: 0 0 .5rem; overflow-wrap: anywhere; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: .1rem 1rem; margin: 0 0 1rem;
  font-size: .9rem; } dl.meta dt { color: var(--mute); } dl.meta dd { margin: 0; overflow-wrap: anywhere; }
nav.lineage ol { margin: .25rem 0 1rem; padding-left: 1.5rem; font-size: .9rem; }
nav.lineage .self { font-weight: 600; }
article.msg { border: 1px solid var(--line); border-radius: 8px; margin: .75rem 0; padding: .5rem .9rem;
  overflow-wrap: anywhere; } .role-user { background: var(--user); } .role-assistant { background:
  var(--assistant); } .role-tool { background: var(--tool); } .role-system { background: var(--system); }
article.msg > header { display: flex; gap: .75rem; align-items: baseline; color: var(--mute);
  font-size: .85rem; } article.msg > header .role { font-weight: 600; color: var(--fg); }
.segment { font-size: 1rem; color: var(--mute); border-top: 2px dashed var(--line); padding-top: .5rem; }
details { margin: .4rem 0; } summary { cursor: pointer; color: var(--mute); }
pre { overflow-x: auto; padding: .5rem; border-radius: 6px; background: rgba(127,127,127,.12);
  white-space: pre-wrap; overflow-wrap: anywhere; } code { font: .9em ui-monospace, monospace; }
.hl { margin: .5rem 0; } .hl pre { margin: 0; } .note { color: var(--mute); font-style: italic; }
.image { color: var(--mute); } table { border-collapse: collapse; } td, th { border: 1px solid
  var(--line); padding: .2rem .5rem; }
"""


class _Html:
    """One render: the sanitizer chain for text (redaction when asked, then `inert`) and the
    Markdown parser whose output is written through `markupsafe`."""

    def __init__(self, redact: bool) -> None:
        self.redact = redact
        self.md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
        self.md.enable(["table", "strikethrough"])
        # Set on the renderer directly: `add_render_rule` would bind them to the renderer.
        renderer = self.md.renderer
        assert isinstance(renderer, RendererHTML)
        cast("dict[str, Any]", renderer.rules).update(
            text=self._render_text,
            code_inline=self._render_code_inline,
            fence=self._render_fence,
            code_block=self._render_fence,
            image=self._render_image,
            link_open=self._render_link_open,
        )

    # -------------------------------------------------------------- text
    def clean(self, value: Any, *, newlines: bool = True) -> str:
        """Store text as safe text (not yet escaped): redacted when asked, controls visible."""
        text = as_text(value)
        if self.redact:
            text = redact_text(text)
        return inert(text, newlines=newlines)

    def line(self, value: Any, width: int | None = None) -> Markup:
        text = as_text(value)
        return escape(one_line(redact_text(text) if self.redact else text, width))

    # -------------------------------------------------------------- Markdown
    def markdown(self, text: str) -> Markup:
        source = inert(redact_text(text) if self.redact else text)  # NUL would become U+FFFD
        tokens = self.md.parse(source)
        self._inert_tokens(tokens)
        return Markup(self.md.renderer.render(tokens, self.md.options, {}))  # rules escape

    def _inert_tokens(self, tokens: Sequence[Token]) -> None:
        """After parsing: character references decoded by the parser become visible tags too."""
        for tok in tokens:
            tok.content = inert(tok.content)
            if tok.info:
                tok.info = inert(tok.info)
            if tok.attrs:
                tok.attrs = {k: inert(v) if isinstance(v, str) else v for k, v in tok.attrs.items()}
            if tok.children:
                self._inert_tokens(tok.children)

    def _render_text(self, tokens: Sequence[Token], idx: int, _o: Any, _e: Any) -> str:
        return str(escape(tokens[idx].content))

    def _render_code_inline(self, tokens: Sequence[Token], idx: int, _o: Any, _e: Any) -> str:
        return str(Markup("<code>{}</code>").format(tokens[idx].content))

    def _render_fence(self, tokens: Sequence[Token], idx: int, _o: Any, _e: Any) -> str:
        tok = tokens[idx]
        lang = tok.info.strip().split(maxsplit=1)[0] if tok.info.strip() else ""
        return str(self.code(tok.content, lang))

    def _render_image(self, tokens: Sequence[Token], idx: int, _o: Any, _e: Any) -> str:
        tok = tokens[idx]
        alt = "".join(c.content for c in tok.children or []) or tok.content
        src = tok.attrs.get("src", "")
        return str(Markup('<span class="image">[image: {}] {}</span>').format(alt, src))

    def _render_link_open(self, tokens: Sequence[Token], idx: int, _o: Any, _e: Any) -> str:
        href = str(tokens[idx].attrs.get("href", ""))
        if urlsplit(href).scheme.lower() in LINK_SCHEMES:
            return str(Markup('<a href="{}" rel="noopener noreferrer nofollow">').format(href))
        return '<a class="inert-link">'  # the link's text stays, pointing nowhere

    # -------------------------------------------------------------- code
    def code(self, text: str, lang: str = "") -> Markup:
        """`text` (already safe) highlighted by Pygments for `lang` (a name it knows); plain text
        (tool results, prompts, an unknown language) as a plain block: Pygments' text lexer would
        only cost time (half the export's, on tool-heavy sessions)."""
        lexer = _lexer(lang.lower()) if lang and len(lang) <= _LANG_MAX else None
        if lexer is not None:
            return Markup(highlight(text, lexer, _HL))  # Pygments escapes what it writes
        return Markup('<div class="hl"><pre>{}</pre></div>').format(text)

    def json_block(self, value: Any) -> Markup:
        shown = pretty_json(value, safe=True)
        if self.redact:
            shown = redact_text(shown)
        return Markup(highlight(inert(shown), JsonLexer(), _HL))  # Pygments escapes


@lru_cache(maxsize=64)
def _lexer(lang: str) -> Lexer | None:
    """Pygments' lexer for a fence's language name (looked up once per name), None if unknown."""
    try:
        return get_lexer_by_name(lang)
    except ClassNotFound:
        return None


def _meta(h: _Html, session: Mapping[str, Any]) -> Markup:
    cost = row_cost(session)
    fields: list[tuple[str, Any]] = [
        ("id", session.get("id")),
        ("profile", session.get("profile")),
        ("source", session.get("source")),
        ("model", session.get("model")),
        ("started", iso(session.get("started_at"))),
        ("ended", iso(session.get("ended_at"))),
        ("end reason", session.get("end_reason")),
        ("parent", session.get("parent_session_id")),
        ("working folder", session.get("cwd")),
        ("tokens in / out", _tokens(session)),
        ("cost", f"${cost:.4f}" if isinstance(cost, (int, float)) and cost else None),
    ]
    rows = Markup("").join(
        Markup("<dt>{}</dt><dd>{}</dd>").format(name, h.line(value))
        for name, value in fields
        if value not in (None, "")
    )
    return Markup('<dl class="meta">{}</dl>').format(rows)


def _tokens(session: Mapping[str, Any]) -> str | None:
    i, o = session.get("input_tokens"), session.get("output_tokens")
    if not isinstance(i, int) and not isinstance(o, int):
        return None
    return f"{i if isinstance(i, int) else 0:,} / {o if isinstance(o, int) else 0:,}"


def _lineage(h: _Html, session: Mapping[str, Any]) -> Markup:
    ids = [x for x in session.get("lineage_session_ids") or [] if x]
    if len(ids) < 2:
        return Markup("")
    own = session.get("id")
    items = Markup("").join(
        Markup('<li class="{}"><a href="#segment-{}">{}</a></li>').format(
            "self" if x == own else "", n, h.line(x, 120)
        )
        for n, x in enumerate(ids, 1)
    )
    return Markup(
        '<nav class="lineage" aria-label="lineage">Compression chain, oldest first:<ol>{}</ol></nav>'
    ).format(items)


def _reasoning(h: _Html, msg: Mapping[str, Any]) -> Markup:
    text = msg.get("reasoning") or msg.get("reasoning_content")
    if not text:
        return Markup("")
    return Markup(
        '<details class="reasoning"><summary>Reasoning</summary><div class="md">{}</div></details>'
    ).format(h.markdown(as_text(text)))


def _tool_calls(h: _Html, msg: Mapping[str, Any]) -> Markup:
    blocks = [
        Markup('<details class="tool-call"><summary>Tool call: <code>{}</code></summary>{}</details>').format(
            h.line(tool_call_fields(call)[0] or "tool", 200), h.json_block(call)
        )
        for call in shown_tool_calls(msg.get("tool_calls"))
    ]
    return Markup("").join(blocks)


def _message(h: _Html, n: int, msg: Mapping[str, Any], limit: int) -> Markup:
    role = one_line(msg.get("role"), 40) or "unknown"
    role_class = role if role in ("user", "assistant", "tool", "system") else "other"
    when = iso(msg.get("timestamp"))
    head = Markup('<header><span class="role">{}</span>{}<time datetime="{}">{}</time>{}</header>').format(
        role,
        Markup(" <code>{}</code>").format(h.line(msg["tool_name"], 200)) if msg.get("tool_name") else "",
        when or "",
        when or "?",
        Markup(' <span class="note">(inactive: rewound or compacted)</span>')
        if msg.get("active") == 0
        else "",
    )
    text = content_text(msg.get("content"))
    if role == "tool":
        shown = text[:limit]
        cut = Markup('<p class="note">[tool result truncated: showing {:,} of {:,} characters]</p>').format(
            len(shown), len(text)
        )
        body = Markup(
            '<details class="tool-result"><summary>Tool result ({:,} characters)</summary>{}{}</details>'
        ).format(len(text), h.code(h.clean(shown)), cut if len(text) > limit else "")
    else:
        body = Markup('<div class="md">{}</div>').format(h.markdown(text)) if text else Markup("")
    return Markup('<article class="msg role-{}" id="m{}">{}{}{}{}</article>').format(
        role_class, n, head, _reasoning(h, msg), body, _tool_calls(h, msg)
    )


def to_html(
    session: Mapping[str, Any], *, redact: bool = False, tool_result_limit: int = TOOL_RESULT_LIMIT
) -> str:
    """One session (or `export_session_lineage`'s chain), read with display=True, as a complete
    HTML document. `redact`: home paths, e-mail addresses and key-like strings replaced."""
    h = _Html(redact)
    sid = session.get("id")
    heading = h.line(session.get("title") or f"Session {as_text(sid)}", 200)
    prompt = content_text(session.get("system_prompt"))
    system = (
        Markup('<details class="system-prompt"><summary>System prompt</summary>{}</details>').format(
            h.code(h.clean(prompt))
        )
        if prompt
        else Markup("")
    )
    every = session.get("messages") or []
    messages = [m for m in every if m.get("display_kind") != "hidden"]
    hidden = len(every) - len(messages)
    lineage = [x for x in session.get("lineage_session_ids") or [] if x]
    parts: list[Markup] = []
    segment, segments = None, 0
    for n, msg in enumerate(messages, 1):
        if len(lineage) > 1 and msg.get("session_id") != segment:
            segment = msg.get("session_id")
            segments += 1
            index = lineage.index(segment) + 1 if segment in lineage else segments
            parts.append(
                Markup('<h2 class="segment" id="segment-{}">Session {}</h2>').format(
                    index, h.line(segment, 120)
                )
            )
        parts.append(_message(h, n, msg, tool_result_limit))
    if not messages:
        parts.append(Markup('<p class="note">No messages.</p>'))
    if hidden:
        parts.append(
            Markup(
                '<p class="note">{:,} hidden row(s) (model-facing: Hermes never shows them) left out; '
                "the JSON export keeps every row.</p>"
            ).format(hidden)
        )
    redacted = Markup(
        '<p class="note">Redacted: home paths, e-mail addresses and key-like strings are replaced.</p>'
    )
    page = Markup(
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta http-equiv="Content-Security-Policy" content="{csp}">\n'
        '<meta name="referrer" content="no-referrer">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="generator" content="hermes-tui">\n'
        "<title>{title}</title>\n<style>{style}{hl}</style>\n</head>\n<body>\n"
        "<header>\n<h1>{title}</h1>\n{meta}{lineage}{system}{redacted}</header>\n<main>\n{body}\n</main>\n"
        "</body>\n</html>\n"
    ).format(
        csp=CSP,
        title=heading,
        style=Markup(_STYLE),  # our constant
        hl=Markup(
            _HL.get_style_defs(".hl")
            + "\n@media (prefers-color-scheme: dark) { .hl { filter: invert(.9) hue-rotate(180deg); } }"
        ),  # noqa: E501
        meta=_meta(h, session),
        lineage=_lineage(h, session),
        system=system,
        redacted=redacted if redact else "",
        body=Markup("\n").join(parts),
    )
    return str(page)


__all__ = ["CSP", "LINK_SCHEMES", "to_html"]
