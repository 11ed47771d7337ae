"""`bench/results` keeps only result files a document cites, each listed in its index
(issue 36): a figure in docs/performance.md can always be traced to its file and command, and a
file nobody cites is deleted rather than left to rot. Names may be cited in brace form
(`usage-1m-p{0,12000}-sbs.json` cites both files)."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
INDEX = RESULTS / "README.md"
#: The documents a result file may be cited by (the index itself does not count).
CITERS = [
    ROOT / "README.md",
    ROOT / "CHANGELOG.md",
    ROOT / "bench" / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
]
NAME = re.compile(r"[\w.{},-]+\.json")


def expand(name: str) -> list[str]:
    """`a{0,1}b{x,y}.json` → every combination; a name without braces → itself."""
    parts = re.split(r"\{([^{}]*)\}", name)
    choices = [[p] if i % 2 == 0 else p.split(",") for i, p in enumerate(parts)]
    return ["".join(c) for c in itertools.product(*choices)]


def names_in(text: str) -> set[str]:
    return {full for token in NAME.findall(text) for full in expand(token)}


def result_files() -> set[str]:
    return {p.name for p in RESULTS.iterdir() if p.is_file() and p.name != "README.md"}


def test_expand_reads_the_brace_form() -> None:
    assert expand("u-p{0,12000}-{a,b}.json") == [
        "u-p0-a.json",
        "u-p0-b.json",
        "u-p12000-a.json",
        "u-p12000-b.json",
    ]
    assert names_in("see `x-{1,2}.json` and y.json") == {"x-1.json", "x-2.json", "y.json"}


def test_every_result_file_is_indexed() -> None:
    indexed = names_in(INDEX.read_text(encoding="utf-8"))
    assert sorted(result_files() - indexed) == []


def test_every_result_file_is_cited_by_a_document() -> None:
    cited = set().union(*(names_in(p.read_text(encoding="utf-8")) for p in CITERS))
    assert sorted(result_files() - cited) == []


def test_the_index_names_only_files_that_exist() -> None:
    table = [line for line in INDEX.read_text(encoding="utf-8").splitlines() if line.startswith("| `")]
    listed = {name for line in table for name in expand(line.split("`")[1])}
    assert sorted(listed - result_files()) == []
