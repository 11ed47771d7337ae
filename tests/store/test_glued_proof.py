"""The glued-word proof (`SearchMixin._glued_ids`) reads the rows of the word's rarest-looking
trigram instead of its phrase, and pre-checks rows in Python: the ids must be those of the phrase
read checked in full, whatever trigram the guess picks and however many rows it has."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_tui.state import SessionDB
from hermes_tui.state.search import fallback as search_module
from hermes_tui.state.search import parse_query
from hermes_tui.state.search.fallback import glued_text as _glued_text
from hermes_tui.state.search.fallback import may_glue as _may_glue
from hermes_tui.state.search.fallback import rarest_trigram as _rarest_trigram
from hermes_tui.state.search.parse import latin_terms as _latin_terms

TEXTS = (
    "修改zeppelin服务端",  # glued both sides
    "the zeppelin landed",  # free
    "部署ZEPPELIN",  # glued, upper case
    "zeppelins 完成",  # a longer word, CJK after a space: not glued
    "请zeppelinx",  # glued before, a longer word after
    "zepto seconds",  # shares the rare trigram only
    "zeppelin",
    "pipeline online",  # shares the common trigrams only
)


def _reference(db: SessionDB, word: str) -> frozenset[int] | None:
    """The phrase read, every row checked in full (the proof before the rare trigram)."""
    rows = (
        db._conn()
        .execute(
            "SELECT m.id, m.content, m.tool_name, m.tool_calls FROM messages_fts_trigram JOIN messages m "
            "ON m.id = messages_fts_trigram.rowid WHERE messages_fts_trigram MATCH ? LIMIT +?",
            (f'"{word}"', db.GLUED_SCAN_MAX + 1),
        )
        .fetchall()
    )
    if len(rows) > db.GLUED_SCAN_MAX:
        return None
    terms = _latin_terms(word)
    return frozenset(int(i) for i, c, t, tc in rows if _glued_text(c, t, tc, terms))


@pytest.fixture
def glued_db(db):
    if db.capabilities()["cjk_index"] != "ready":
        pytest.skip("needs the cjk_unicode61 index")
    db.create_session("g", "cli")
    for i, text in enumerate(TEXTS * 3):
        db.append_message("g", "user", text if i % 5 else f"{text} 0")
    db.append_message("g", "tool", "zeppelin工具", tool_name="terminal")  # tool rows: not in the index
    db.append_message("g", "assistant", "", tool_calls='[{"name": "调zeppelin"}]')
    db.append_message("g", "user", [{"type": "text", "text": "多模态zeppelin"}])  # stored as JSON
    return db


@pytest.mark.parametrize("scan_max", [256, 8, 2])
@pytest.mark.parametrize("word", ["zeppelin", "zepto", "pipeline", "seconds", "landed"])
def test_the_rare_trigram_proof_equals_the_phrase_proof(glued_db, monkeypatch, scan_max, word):
    """Small caps send the rare trigram's read, then the phrase's, past `GLUED_SCAN_MAX`."""
    monkeypatch.setattr(type(glued_db), "GLUED_SCAN_MAX", scan_max)
    tri = ("messages_fts_trigram", f'"{word}"')
    want = _reference(glued_db, word)
    got = glued_db._glued_ids(tri, parse_query(word))
    if want is None:
        assert got is None
    else:  # (a rare trigram with few rows may still answer where the phrase had too many)
        assert got == want
    if word == "zeppelin" and scan_max == 256:
        assert len(got) >= 5  # glued rows of content, tool calls and multimodal JSON


def test_the_rarest_trigram_is_a_trigram_of_the_word():
    assert _rarest_trigram("zeppelin") == "zep"
    assert _rarest_trigram("Kubernetes") == "kub"
    assert _rarest_trigram("abc") == "abc"


@settings(max_examples=400, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list('zepZEP修改 \x00json:[]"')), max_size=12),
    st.one_of(st.none(), st.text(alphabet=st.sampled_from(list("zep改 ")), max_size=6)),
    st.sampled_from(["zep", "ze", "e"]),
)
def test_the_cheap_no_never_drops_a_glued_row(content, tool_name, word):
    terms = _latin_terms(word)
    if not _may_glue(word.lower(), content, tool_name, None):
        assert not _glued_text(content, tool_name, None, terms)


def test_rows_without_the_word_or_cjk_are_cheap_noes():
    assert not _may_glue("zeppelin", "the zeppelin landed", None, None)  # no CJK
    assert not _may_glue("zeppelin", "修改服务端", "terminal", None)  # no word
    assert _may_glue("zeppelin", "修改ZEPPELIN", None, None)
    assert _may_glue("zeppelin", search_module.CONTENT_JSON_PREFIX + "[]", None, None)  # JSON: a maybe
    assert _may_glue("zeppelin", b"bytes", None, None)
