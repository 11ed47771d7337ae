"""The repository's own text files hold no merge-conflict markers: a merge once left
`<<<<<<< HEAD` … `>>>>>>>` in bench/README.md, and nothing else noticed."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUFFIXES = {".py", ".md", ".toml", ".tcss", ".cfg", ".txt", ".sh", ".yml", ".yaml"}
SKIP = {".venv", ".git", "node_modules", "__pycache__", "build", "dist"}
MARKER = re.compile(r"^(<{7} |={7}$|>{7} )", re.M)


def text_files() -> list[Path]:
    found = []
    for path in ROOT.rglob("*"):
        rel = path.relative_to(ROOT).parts
        if any(p in SKIP or p.startswith(".venv") or p.endswith(".egg-info") for p in rel):
            continue
        if path.is_file() and (path.suffix in SUFFIXES or path.name == "run"):
            found.append(path)
    return found


def test_no_merge_conflict_markers() -> None:
    files = text_files()
    assert any(f.name == "README.md" for f in files)
    bad = [
        str(f.relative_to(ROOT))
        for f in files
        if MARKER.search(f.read_text(encoding="utf-8", errors="replace"))
    ]
    assert bad == []
