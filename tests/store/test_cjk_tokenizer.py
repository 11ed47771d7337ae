"""The `cjk_unicode61` tokenizer: exact tokens and matches for both
implementations, and their token-for-token identity — which is what keeps an index written
through one and maintained through the other consistent."""

from __future__ import annotations

import os
import re
from pathlib import Path

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_tui.state import cjk
from hermes_tui.state.cjk import python_tokenizer as pt

C_BUILT = cjk.compiled_extension_path() is not None
DOC = apsw.FTS5_TOKENIZE_DOCUMENT


def _need(impl: str) -> None:
    """Skip a C case only when the extension was not built — but never silently in CI."""
    if impl == "c" and not C_BUILT:
        msg = "C extension hermes_tui/state/cjk/_fts5_cjk*.so not built (pip install -e . needs gcc)"
        if os.environ.get("CI"):
            pytest.fail(msg + " — CI must build it")
        pytest.skip(msg)


@pytest.fixture(params=["python", "c"])
def impl(request: pytest.FixtureRequest) -> str:
    _need(request.param)
    return request.param


def _conn(impl: str, path: str | Path = ":memory:") -> apsw.Connection:
    conn = apsw.Connection(str(path))
    assert cjk.install_cjk_tokenizer(conn, prefer=impl) == impl
    return conn


# ---------------------------------------------------------------- exact tokens

TOKEN_CASES = [
    ("日本語のテキスト", ["日本", "本語", "語の", "のテ", "テキ", "キス", "スト"]),
    ("東京", ["東京"]),
    ("東", ["東"]),
    ("웅기가말했다", ["웅기", "기가", "가말", "말했", "했다"]),
    ("Hello世界ABC", ["hello", "世界", "abc"]),
    ("修改youer服务端", ["修改", "youer", "服务", "务端"]),
    ("カタカナ ひらがな", ["カタ", "タカ", "カナ", "ひら", "らが", "がな"]),
    ("Ｆｕｌｌ", ["ｆｕｌｌ"]),
    ("Café Ü", ["cafe", "u"]),
    ("ㄱ한", ["ㄱ한"]),
    ("你好，世界", ["你好", "世界"]),
    ("〜「日本」", ["日本"]),
    ("ｶﾀｶﾅ", ["ｶﾀｶﾅ"]),
    ("𠮷野家", ["𠮷野", "野家"]),
]


@pytest.mark.parametrize(("text", "expected"), TOKEN_CASES, ids=[c[0] for c in TOKEN_CASES])
def test_spec_tokens(impl: str, text: str, expected: list[str]) -> None:
    assert [t for t, _, _ in cjk.tokenize(text, impl=impl)] == expected


OFFSET_CASES = [
    ("日本語", [("日本", 0, 6), ("本語", 3, 9)]),
    ("〜「日本」", [("日本", 6, 12)]),
    ("𠮷野家", [("𠮷野", 0, 7), ("野家", 4, 10)]),
    ("a 東 b", [("a", 0, 1), ("東", 2, 5), ("b", 6, 7)]),
    ("Hello世界ABC", [("hello", 0, 5), ("世界", 5, 11), ("abc", 11, 14)]),
    ("カタ ひら", [("カタ", 0, 6), ("ひら", 7, 13)]),
    # unicode61 folds Ⱥ (2 bytes) to ⱥ (3 bytes): positions inside the folded token run past
    # the original token end and are clamped to it.
    ("ȺȺȺ日本", [("ⱥⱥⱥ", 0, 9), ("日本", 9, 12)]),
    # folding shrinks é: later offsets drift left, exactly as in the C code
    ("Café日本", [("cafe", 0, 4), ("日本", 4, 10)]),
    ("Hello world", [("hello", 0, 5), ("world", 6, 11)]),
]


@pytest.mark.parametrize(("text", "expected"), OFFSET_CASES, ids=[c[0] for c in OFFSET_CASES])
def test_spec_offsets(impl: str, text: str, expected: list[tuple[str, int, int]]) -> None:
    assert cjk.tokenize(text, impl=impl) == expected


def test_arguments_pass_through_to_unicode61(impl: str) -> None:
    assert cjk.tokenize("Café日本", ["remove_diacritics", "0"], impl=impl)[0][0] == "café"
    assert cjk.tokenize("a-b東京", ["tokenchars", "-"], impl=impl) == [("a-b", 0, 3), ("東京", 3, 9)]
    assert [t for t, _, _ in cjk.tokenize("日本x語", ["separators", "x"], impl=impl)] == ["日本", "語"]
    conn = _conn(impl)
    with pytest.raises(apsw.Error):
        conn.execute("CREATE VIRTUAL TABLE bad USING fts5(c, tokenize='cjk_unicode61 remove_diacritics 7')")


# ---------------------------------------------------------------- match table

MATCH_ROWS = [
    (1, "日本語のテキストを検索したい"),
    (2, "東京タワーは東京にあります。東"),
    (3, "웅기가말했다 일본 구글"),
    (4, "修改youer服务端"),
    (5, "東 京"),
    (6, "Hello世界ABC こんにちは"),
]
# query -> expected rowids; ORDERED ones are checked in bm25 order, the others as sets
MATCH_CASES = [
    ('"日本語"', [1], False),
    ('"日本"', [1], False),
    ('"東京"', [2], False),
    ('"東"', [5, 2], True),
    ('"일본"', [3], False),
    ('"youer"', [4], False),
    ('"修改youer"', [4], False),
    ('"語のテ"', [1], False),
    ('"本"', [], False),
    ("日本 OR 일본", [3, 1], True),
    ('"東京タワー"', [2], False),
    # not in the spec table, but follow from it: prefix queries and non-CJK tokens
    ('"テキス"*', [1], False),
    ("hello AND 世界", [6], False),
    ('"こんにちは"', [6], False),
]


@pytest.fixture(params=["python", "c"])
def match_conn(request: pytest.FixtureRequest) -> apsw.Connection:
    _need(request.param)
    conn = _conn(request.param)
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(content, tokenize='cjk_unicode61')")
    conn.executemany("INSERT INTO t(rowid, content) VALUES (?, ?)", MATCH_ROWS)
    return conn


@pytest.mark.parametrize(("query", "expected", "ordered"), MATCH_CASES, ids=[c[0] for c in MATCH_CASES])
def test_spec_matches(match_conn: apsw.Connection, query: str, expected: list[int], ordered: bool) -> None:
    got = [r for (r,) in match_conn.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t)", (query,))]
    if ordered:
        assert got == expected
    else:
        assert set(got) == set(expected) and len(got) == len(expected)


def test_highlight_offsets_are_exact_for_cjk(match_conn: apsw.Connection) -> None:
    (hl,) = match_conn.execute("SELECT highlight(t, 0, '[', ']') FROM t WHERE t MATCH '\"東京\"'").fetchone()
    assert hl == "[東京]タワーは[東京]にあります。東"


# ---------------------------------------------------------------- an independent oracle

_CJK_CHAR = re.compile("[" + "".join(f"{chr(a)}-{chr(b)}" for a, b in pt.CJK_RANGES) + "]")


def _oracle(text: str, args: list[str]) -> list[tuple[str, int, int]]:
    """The tokenizer's rules written as plainly as possible, one character at a time, on unicode61's
    output."""
    u61 = apsw.Connection(":memory:").fts5_tokenizer("unicode61", args)
    out: list[tuple[str, int, int]] = []
    for start, end, tok in u61(text.encode(), DOC, None, include_colocated=False):
        if not _CJK_CHAR.search(tok):
            out.append((tok, start, end))
            continue
        chars = list(tok)
        pos = [0]
        for ch in chars:
            pos.append(pos[-1] + len(ch.encode()))

        def emit(
            i: int, j: int, s: int = start, e: int = end, cs: list[str] = chars, ps: list[int] = pos
        ) -> None:
            out.append(("".join(cs[i:j]), min(s + ps[i], e), min(s + ps[j], e)))

        i = 0
        while i < len(chars):
            j = i
            kind = bool(_CJK_CHAR.match(chars[i]))
            while j < len(chars) and bool(_CJK_CHAR.match(chars[j])) == kind:
                j += 1
            if not kind or j - i == 1:
                emit(i, j)
            else:
                for k in range(i, j - 1):
                    emit(k, k + 2)
            i = j
    return out


# ---------------------------------------------------------------- properties

_POOLS = [
    "日本語中文汉字東京タワー",  # Han + kana
    "ひらがなカタカナーㇰㇱ",  # Hiragana, Katakana, phonetic ext
    "한국어웅기가말했다ᄀ까ㄱㄴꥠힰ",  # Hangul syllables, Jamo, compat, ext A/B
    "𠮷𪚲𫝀丽",  # astral CJK and compat ideographs
    "abcXYZ019_",
    "éÜñçÅøßẞǅȺǄİ",  # accents, folding that changes byte length
    "\u0301\u0308\u0327\u3099\u309a",  # combining marks (incl. kana voicing marks)
    "😀👍🏽🇯🇵❤️\u200d",  # emoji, ZWJ, variation selectors
    " \t\n.,;!?-'\"/",
    "　、。「」〜・（）",  # CJK punctuation (not CJK for the tokenizer)
    "ＡＢＣｆｕｌｌ１２ｶﾀｶﾅﾞ",  # full-width Latin, half-width katakana
]
_mixed_char = st.sampled_from(_POOLS).flatmap(lambda pool: st.sampled_from(pool))
mixed_text = st.lists(st.one_of(_mixed_char, st.characters(blacklist_categories=("Cs",))), max_size=40).map(
    "".join
)
any_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=60)
_arg_chars = st.text(alphabet=st.sampled_from("-_.x日本。、ーa1"), min_size=1, max_size=3)
tok_args = st.one_of(
    st.just([]),
    st.sampled_from("012").map(lambda v: ["remove_diacritics", v]),
    _arg_chars.map(lambda v: ["tokenchars", v]),
    _arg_chars.map(lambda v: ["separators", v]),
    st.sampled_from(["L* N* Co", "L* N* Co Mn", "Lo"]).map(lambda v: ["categories", v]),
    st.tuples(st.sampled_from("012"), _arg_chars).map(
        lambda a: ["remove_diacritics", a[0], "tokenchars", a[1]]
    ),
)
PROPS = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _check_offsets(text: str, toks: list[tuple[str, int, int]]) -> None:
    n = len(text.encode())
    last = 0
    for _, s, e in toks:
        assert 0 <= s <= e <= n
        assert s >= last
        last = s


@PROPS
@given(text=st.one_of(mixed_text, any_text), args=tok_args)
def test_both_implementations_identical(text: str, args: list[str]) -> None:
    """Python twin == plain oracle (always) == C extension (whenever it is built)."""
    py = cjk.tokenize(text, args, impl="python")
    assert py == _oracle(text, args)
    _check_offsets(text, py)
    if C_BUILT:
        assert cjk.tokenize(text, args, impl="c") == py


@PROPS
@given(
    text=mixed_text,
    args=tok_args,
    flags=st.sampled_from(
        [
            apsw.FTS5_TOKENIZE_QUERY,
            apsw.FTS5_TOKENIZE_QUERY | apsw.FTS5_TOKENIZE_PREFIX,
            apsw.FTS5_TOKENIZE_AUX,
        ]
    ),
)
def test_identical_for_every_tokenize_reason(text: str, args: list[str], flags: int) -> None:
    _need("c")
    assert cjk.tokenize(text, args, impl="c", flags=flags) == cjk.tokenize(
        text, args, impl="python", flags=flags
    )


@settings(max_examples=150, deadline=None)
@given(
    text=st.text(
        alphabet=st.characters(blacklist_categories=("Cs",)).filter(lambda c: not _CJK_CHAR.match(c))
    )
)
def test_text_without_cjk_is_unicode61_unchanged(text: str) -> None:
    u61 = apsw.Connection(":memory:").fts5_tokenizer("unicode61", [])
    want = [(t, s, e) for s, e, t in u61(text.encode(), DOC, None, include_colocated=False)]
    assert cjk.tokenize(text) == want
    if C_BUILT:
        assert cjk.tokenize(text, impl="c") == want


@pytest.fixture(scope="module")
def all_non_cjk() -> str:
    every = "".join(map(chr, range(0xD800))) + "".join(map(chr, range(0xE000, 0x110000)))
    return _CJK_CHAR.sub("", every)


@pytest.mark.parametrize("diacritics", ["0", "1", "2"])
def test_unicode61_never_folds_into_cjk(all_non_cjk: str, diacritics: str) -> None:
    """The Python fast path skips inputs without a CJK lead byte; sound only if no
    non-CJK code point folds into a CJK one.  Checked over all of Unicode."""
    text = all_non_cjk
    u61 = apsw.Connection(":memory:").fts5_tokenizer("unicode61", ["remove_diacritics", diacritics])
    toks = u61(text.encode(), DOC, None, include_offsets=False, include_colocated=False)
    assert toks and not any(_CJK_CHAR.search(t) for t in toks)


def test_python_colocated_pieces_follow_the_c_rule() -> None:
    """unicode61 emits no colocated tokens; the twin still mirrors the C rule for them."""

    def inner(utf8: bytes, flags: int, locale: str | None) -> list[tuple]:
        return [(0, 9, "日本語", "にほ"), (10, 11, "x", "y")]

    got = pt.CjkTokenizer(inner)("日本語 x 日".encode(), DOC, None)
    assert got == [(0, 6, "日本"), (3, 9, "本語", "にほ"), (10, 11, "x", "y")]

    def inner2(utf8: bytes, flags: int, locale: str | None) -> list[tuple]:
        return [(0, 3, "a", "東京都")]

    assert pt.CjkTokenizer(inner2)("abc東".encode(), DOC, None) == [(0, 3, "a", "東京"), (3, 3, "京都")]


# ---------------------------------------------------------------- cross-implementation index

DOCS = [
    "日本語のテキストを検索したい",
    "東京タワーは東京にあります。東",
    "웅기가말했다 일본 구글",
    "修改youer服务端 Hello世界ABC",
    "Café Ü ȺȺȺ日本 𠮷野家 ｶﾀｶﾅ Ｆｕｌｌ",
    "plain ascii only, nothing to split",
    "emoji 😀日本😀 and combining e\u0301東\u3099京",
]
_EXT_DDL = (
    "CREATE TABLE docs(id INTEGER PRIMARY KEY, body TEXT);"
    "CREATE VIRTUAL TABLE fts USING fts5(body, content='docs', content_rowid='id', tokenize='cjk_unicode61');"
)


def _fill(conn: apsw.Connection) -> None:
    conn.execute(_EXT_DDL)
    for i, body in enumerate(DOCS, 1):
        conn.execute("INSERT INTO docs(id, body) VALUES (?, ?)", (i, body))
        conn.execute("INSERT INTO fts(rowid, body) VALUES (?, ?)", (i, body))


def _delete_half(conn: apsw.Connection) -> None:
    for i, body in list(enumerate(DOCS, 1))[::2]:
        conn.execute("INSERT INTO fts(fts, rowid, body) VALUES ('delete', ?, ?)", (i, body))
        conn.execute("DELETE FROM docs WHERE id = ?", (i,))


def _integrity(conn: apsw.Connection) -> None:
    conn.execute("INSERT INTO fts(fts, rank) VALUES ('integrity-check', 1)")


@pytest.mark.parametrize(("writer", "deleter"), [("python", "c"), ("c", "python")])
def test_external_content_index_written_by_one_maintained_by_other(
    tmp_path: Path, writer: str, deleter: str
) -> None:
    _need("c")
    path = tmp_path / "x.db"
    w = _conn(writer, path)
    _fill(w)
    w.close()
    d = _conn(deleter, path)
    _integrity(d)  # re-tokenizes all content with the other implementation
    _delete_half(d)
    _integrity(d)
    d.close()
    w = _conn(writer, path)
    _integrity(w)
    got = {r for (r,) in w.execute("SELECT rowid FROM fts WHERE fts MATCH '\"日本\"'")}
    assert got == {i for i, body in enumerate(DOCS, 1) if "日本" in body and i % 2 == 0}


def test_integrity_check_detects_a_different_tokenizer(tmp_path: Path) -> None:
    """Control for the test above: with a tokenizer that differs, the same steps corrupt."""
    path = tmp_path / "x.db"
    w = _conn("python", path)
    _fill(w)
    w.close()
    other = apsw.Connection(str(path))
    other.register_fts5_tokenizer(
        "cjk_unicode61", lambda con, args: con.fts5_tokenizer("unicode61", list(args))
    )
    _delete_half(other)
    with pytest.raises(apsw.Error):
        _integrity(other)


# ---------------------------------------------------------------- installer


def test_install_disabled_by_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for value in ("0", "false", "OFF", "no"):
        monkeypatch.setenv("HERMES_CJK_FTS", value)
        conn = apsw.Connection(":memory:")
        assert cjk.install_cjk_tokenizer(conn) is None
        with pytest.raises(apsw.Error):
            conn.execute("CREATE VIRTUAL TABLE t USING fts5(c, tokenize='cjk_unicode61')")


def test_install_prefers_c_and_honours_env_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _need("c")
    assert cjk.install_cjk_tokenizer(apsw.Connection(":memory:")) == "c"
    assert cjk.install_cjk_tokenizer(apsw.Connection(":memory:"), prefer="python") == "python"
    monkeypatch.setenv("HERMES_FTS5_CJK_SO", str(tmp_path / "missing.so"))
    assert cjk.compiled_extension_path() is None
    assert cjk.install_cjk_tokenizer(apsw.Connection(":memory:")) == "python"
    assert cjk.install_cjk_tokenizer(apsw.Connection(":memory:"), prefer="c") is None
    bogus = tmp_path / "bogus.so"
    bogus.write_bytes(b"not an ELF file")
    monkeypatch.setenv("HERMES_FTS5_CJK_SO", str(bogus))
    assert cjk.install_cjk_tokenizer(apsw.Connection(":memory:")) == "python"


def test_c_entry_point_alias_and_load_extension_disabled_after() -> None:
    _need("c")
    path = cjk.compiled_extension_path()
    assert path is not None
    conn = apsw.Connection(":memory:")
    conn.enable_load_extension(True)
    conn.load_extension(str(path), "sqlite3_fts5_cjk_init")
    assert cjk.tokenize("東京都", impl="c") == [("東京", 0, 6), ("京都", 3, 9)]
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(c, tokenize='cjk_unicode61')")
    conn2 = apsw.Connection(":memory:")
    assert cjk.install_cjk_tokenizer(conn2) == "c"
    with pytest.raises(apsw.Error):  # load_extension switched off again after install
        conn2.load_extension(str(path), "sqlite3_ftscjk_init")


def test_tokenize_rejects_unknown_impl() -> None:
    with pytest.raises(ValueError):
        cjk.tokenize("x", impl="rust")


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=40)
    | st.text(
        alphabet=st.sampled_from(
            "a 漢字かなカナ한글\u3000\u30ff\u3400\u4dbf\U00020000\U0002a6df\U0002a6e0\ud7af\ud7b0"
        ),
        max_size=20,
    )
)
def test_routing_helpers_agree_with_the_codepoint_ranges(text):
    """The regex class behind `contains_cjk`/`count_cjk`/`has_lone_cjk_run` is the spec's ranges."""
    from hermes_tui.state import fts_query as fq

    flags = [fq.is_cjk_codepoint(ord(c)) for c in text]
    assert fq.contains_cjk(text) == any(flags)
    assert fq.count_cjk(text) == sum(flags)
    runs = [len(m.group()) for m in re.finditer(r"1+", "".join("1" if f else "0" for f in flags))]
    assert fq.has_lone_cjk_run(text) == (1 in runs)
