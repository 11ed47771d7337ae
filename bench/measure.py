"""What the benchmark measures and how it sums it up, shared by the driver and both workers.

Stdlib only: it is imported under our interpreter and under the peer's.
"""

from __future__ import annotations

from typing import Any

import corpus


def pct(values: list[float], p: float) -> float:
    """The nearest-rank `p`th percentile (NaN for no values)."""
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(p / 100 * (len(s) - 1))))]


def search_cases(sources: tuple[str, ...] = ("telegram",)) -> list[tuple[str, str, dict[str, Any]]]:
    """(key, query, search_messages kwargs): every query class x {all, each of `sources`} x {rank,
    newest}. The filter on telegram (25% of the corpus' sessions) is keyed `src`, any other
    source `src_<name>` (slack: 12%, the rarest)."""
    filters: list[tuple[str, list[str] | None]] = [("all", None)]
    filters += [("src" if s == "telegram" else f"src_{s}", [s]) for s in sources]
    cases = []
    for name, q in corpus.QUERIES:
        for src_name, src in filters:
            for sort in (None, "newest"):
                kw: dict[str, Any] = {"limit": 20}
                if src:
                    kw["source_filter"] = src
                if sort:
                    kw["sort"] = sort
                cases.append((f"{name}|{src_name}|{sort or 'rank'}", q, kw))
    return cases


def search_summary(ms: list[float], case: dict[str, Any]) -> dict[str, Any]:
    """The report entry of one search case: percentiles of `ms` plus its counts and ids."""
    return {
        "p50_ms": pct(ms, 50),
        "p95_ms": pct(ms, 95),
        "reps": len(ms),
        **{k: case[k] for k in ("n", "n_limit500", "ids20")},
    }


def private_settings() -> None:
    """Point the browser's settings file at a fresh temporary folder: a bench never reads or
    changes the user's own remembered settings (the browser writes them when keys change them)."""
    import os
    import tempfile

    os.environ["HERMES_TUI_CONFIG"] = os.path.join(
        tempfile.mkdtemp(prefix="hermes-tui-bench-"), "settings.toml"
    )
