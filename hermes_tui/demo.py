"""A realistic demo `state.db`, written only through the public store API.

English and CJK sessions, tool calls and results, reasoning, compression chains, branches,
delegates, rewound and compaction-archived messages, several sources and models, costs, and
one agent text full of markup-looking brackets, spread over the four months before a base time
(most sessions ended, a few open). Content and every date (session start/end, messages) are
derived from a seed and that base, so a demo built with a fixed ``base`` is reproducible (tests
and screenshots use that); `ensure_demo_db()` builds it at the current time into the user cache
folder, once per `DEMO_VERSION`.
"""

from __future__ import annotations

import hashlib
import os
import random
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Bump when the demo's content or timeline changes: a cached demo of another version is rebuilt.
#: v2: realistic ages (started_at/ended_at over 120 days; v1 stamped every session at build time).
#: v3: each turn's usage stamped at its answer (v2 stamped all usage at build time: one bar in Usage).
DEMO_VERSION = 3
DEMO_META_VERSION = "hermes_tui.demo_version"
DEMO_META_BASE = "hermes_tui.demo_base"
DAY = 86400.0


def cache_dir() -> Path:
    """The one cache folder (`hermes_tui.state.user_cache_dir`; never inside ~/.hermes)."""
    from hermes_tui.state import user_cache_dir

    return user_cache_dir()


def demo_path() -> Path:
    """Where the cached demo lives."""
    return cache_dir() / f"demo-state-v{DEMO_VERSION}.db"


@dataclass
class Turn:
    """One exchange: a prompt, optional reasoning and tool use, and the answer."""

    user: str
    answer: str
    reasoning: str = ""
    tool: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    result: str = ""


@dataclass
class Topic:
    """A conversation template."""

    title: str
    turns: list[Turn]
    source: str = "cli"
    model: str = "anthropic/claude-sonnet-4"


def _topics() -> list[Topic]:
    """Hand-written conversations; repeated with variations to fill the demo."""
    return [
        Topic(
            "Fix flaky CI on the payments service",
            [
                Turn(
                    "The `payments` integration tests fail about one run in five on CI. Can "
                    "you find out why?",
                    "The failures all come from `test_refund_idempotency`. It relies on wall-clock ordering "
                    "of two inserts; on a loaded runner they land in the same millisecond.\n\n"
                    "**Fix:** order by the primary key instead:\n\n```python\nrows = db.execute(\n"
                    '    "SELECT * FROM refunds WHERE order_id = ? ORDER BY id", (order_id,)\n)\n```',
                    reasoning="Five failures share one test. Timestamps have millisecond resolution; "
                    "two inserts in one transaction can tie. Ordering by id is deterministic.",
                    tool="terminal",
                    args={"command": "pytest tests/integration -k refund -x -q --count=20"},
                    result="FAILED tests/integration/test_refunds.py::test_refund_idempotency - "
                    "AssertionError: ['r2', 'r1'] != ['r1', 'r2']\n4 failed, 16 passed in 41.2s",
                ),
                Turn(
                    "Apply it and rerun 50 times.",
                    "Applied. 50/50 runs pass now; the test is deterministic.",
                    tool="terminal",
                    args={"command": "pytest tests/integration -k refund -q --count=50"},
                    result="50 passed in 98.7s",
                ),
            ],
        ),
        Topic(
            "Migrate Postgres 14 to 16",
            [
                Turn(
                    "Plan an upgrade of our Postgres 14 cluster to 16 with minimal downtime.",
                    "Use logical replication:\n\n1. Stand up a PG16 replica.\n2. `CREATE PUBLICATION` on 14, "
                    "`CREATE SUBSCRIPTION` on 16.\n3. Wait for lag ≈ 0, freeze writes, switch the DSN.\n\n"
                    "Downtime is the switch itself: about 30 seconds.",
                    reasoning="pg_upgrade --link is fast but needs downtime on the primary; logical "
                    "replication allows a near-zero cutover.",
                ),
                Turn(
                    "What breaks between 14 and 16?",
                    "Mostly nothing for you: `public` schema CREATE is revoked by default since 15, and "
                    "some `pg_stat_*` columns moved. Check extensions: `postgis` needs 3.4+.",
                    tool="web_search",
                    args={"query": "postgresql 16 release notes incompatibilities"},
                    result='{"results": [{"title": "PostgreSQL 16 Release Notes", "url": "https://www.postgresql.org/docs/16/release-16.html"}]}',
                ),
            ],
            source="telegram",
            model="openai/gpt-5",
        ),
        Topic(
            "Rust CLI for parsing nginx logs",
            [
                Turn(
                    "Write a small Rust CLI that reads nginx access logs and prints the top 10 paths.",
                    "```rust\nuse std::collections::HashMap;\nuse std::io::{self, BufRead};\n\nfn main() {\n"
                    "    let mut counts: HashMap<String, u64> = HashMap::new();\n"
                    "    for line in io::stdin().lock().lines().map_while(Result::ok) {\n"
                    "        if let Some(path) = line.split('\"').nth(1).and_then(|r| "
                    "r.split(' ').nth(1)) {\n"
                    "            *counts.entry(path.to_string()).or_default() += 1;\n        }\n    }\n"
                    "    let mut top: Vec<_> = counts.into_iter().collect();\n"
                    "    top.sort_by(|a, b| b.1.cmp(&a.1));\n"
                    '    for (path, n) in top.into_iter().take(10) {\n        println!("{n:>8} {path}");\n   '
                    " }\n}\n```",
                    tool="write_file",
                    args={"path": "src/main.rs", "bytes": 612},
                    result="wrote 612 bytes to src/main.rs",
                ),
            ],
            model="qwen/qwen3-coder",
        ),
        Topic(
            "Prompt template with [/INST] markers",
            [
                Turn(
                    "Why does my Llama prompt `<s>[INST] hi [/INST]` break when I add [bold]tags[/bold]?",
                    "Text like `[/INST]` and [bold]x[/bold] is literal here. The model sees the brackets "
                    "as tokens: keep `[INST]` … `[/INST]` balanced, and escape user text that contains "
                    "`[/INST]` so it cannot close the instruction early. [link=evil]not a link[/link]",
                ),
            ],
            source="discord",
            model="deepseek/deepseek-v3",
        ),
        Topic(
            "Kubernetes deploy rollback",
            [
                Turn(
                    "The 14:02 deploy of `checkout` is returning 502s. Roll it back.",
                    "Rolled back to revision 41; error rate is back to 0.1%.",
                    reasoning="502s started exactly at rollout; rollback first, investigate after.",
                    tool="terminal",
                    args={"command": "kubectl rollout undo deploy/checkout --to-revision=41 -n shop"},
                    result="deployment.apps/checkout rolled back",
                ),
            ],
            source="slack",
            model="anthropic/claude-sonnet-4",
        ),
        Topic(
            "Nightly backup report",
            [
                Turn(
                    "Summarise last night's backup job.",
                    "All 12 volumes backed up; 1.9 TB total, 3 h 12 min. `media-02` was 40% "
                    "slower than usual.",
                    tool="read_file",
                    args={"path": "/var/log/backup/nightly.log"},
                    result="\n".join(
                        f"2025-06-0{i % 9 + 1} 03:{i:02d}:00 volume-{i:02d} OK {100 + i * 7} GB"
                        for i in range(60)
                    ),
                ),
            ],
            source="cron",
            model="google/gemini-2.5-pro",
        ),
        Topic(
            "修复数据库连接池泄漏",
            [
                Turn(
                    "我们的服务运行几个小时后数据库连接池就耗尽了，帮我排查一下。",
                    "问题在 `get_user()`：异常路径上没有归还连接。改用上下文管理器：\n\n"
                    "```python\nwith pool.connection() as conn:\n    return conn.execute(sql, "
                    "args).fetchone()\n```\n\n"
                    "这样无论是否抛出异常，连接都会被归还到连接池。",
                    reasoning="连接数随时间单调增长，说明有泄漏；检查所有获取连接但未释放的路径。",
                    tool="grep",
                    args={"pattern": "pool.getconn", "path": "app/"},
                    result=(
                        "app/users.py:41:    conn = pool.getconn()\napp/orders.py:88:    conn "
                        "= pool.getconn()"
                    ),
                ),
            ],
            source="telegram",
            model="deepseek/deepseek-v3",
        ),
        Topic(
            "東京の天気予報APIを調べる",
            [
                Turn(
                    "東京の天気予報を取得できる無料のAPIを教えてください。",
                    "気象庁のJSON（`https://www.jma.go.jp/bosai/forecast/data/forecast/130000.json`）が"
                    "無料で使えます。APIキーは不要です。",
                    tool="web_fetch",
                    args={"url": "https://www.jma.go.jp/bosai/forecast/data/forecast/130000.json"},
                    result='[{"publishingOffice": "気象庁", "reportDatetime": "2025-06-01T11:00:00+09:00"}]',
                ),
            ],
            source="discord",
            model="openai/gpt-5",
        ),
        Topic(
            "한국어 형태소 분석기 비교",
            [
                Turn(
                    "한국어 형태소 분석기 중에 검색 인덱스에 쓰기 좋은 것은?",
                    "검색용으로는 **Mecab-ko**가 빠르고 안정적입니다. Kiwi는 정확도가 높지만 조금 느립니다.",
                ),
            ],
            source="slack",
            model="google/gemini-2.5-pro",
        ),
        Topic(
            "Explain SQLite FTS5 tokenizers",
            [
                Turn(
                    "What is the difference between unicode61 and trigram tokenizers in FTS5?",
                    "`unicode61` splits on Unicode word boundaries and folds case; it cannot split CJK text, "
                    "which has no spaces. `trigram` indexes every 3-character window, so it matches "
                    "substrings (including CJK) but needs queries of 3+ characters.",
                ),
                Turn(
                    "And for 2-character Chinese words?",
                    "Neither matches them well: fall back to a LIKE scan, or use a CJK-aware tokenizer "
                    "that emits bigrams.",
                ),
            ],
        ),
    ]


def _sid(ts: float, rng: random.Random) -> str:
    """Upstream-style id: ``YYYYMMDD_HHMMSS_xxxxxx``."""
    return time.strftime("%Y%m%d_%H%M%S", time.gmtime(ts)) + "_" + f"{rng.getrandbits(24):06x}"


PRICES = {  # $ per million tokens (in, out), for plausible estimated costs
    "anthropic/claude-sonnet-4": (3.0, 15.0),
    "openai/gpt-5": (1.25, 10.0),
    "google/gemini-2.5-pro": (1.25, 10.0),
    "qwen/qwen3-coder": (0.4, 1.6),
    "deepseek/deepseek-v3": (0.27, 1.1),
}


END_REASONS = ("user_exit", "user_exit", "user_exit", "idle_timeout", "session_reset")


class _Builder:
    """Collects sessions as `import_sessions` records on a fake timeline, then writes them.

    `create_session` stamps `started_at` with the wall clock, which made every demo session
    "started just now" (prune's "older than 90 days" found nothing, every date filter showed
    all rows). Records carry their own `started_at`/`ended_at`; what `import_sessions` does not
    restore (token usage, a rewind, a compaction) is replayed through the API afterwards.
    """

    def __init__(self, base: float, rng: random.Random) -> None:
        self.base = base
        self.rng = rng
        self.records: dict[str, dict[str, Any]] = {}
        #: Per session, the usage of each turn and when its answer came (`write` records each
        #: at its own time, so the Usage screen shows the demo's spend on the days it ran).
        self.usage: dict[str, list[tuple[float, dict[str, Any]]]] = {}

    def session(
        self,
        topic: Topic,
        start: float,
        *,
        title: str | None = None,
        parent: str | None = None,
        model_config: dict[str, Any] | None = None,
        source: str | None = None,
        turns: list[Turn] | None = None,
        end: str | None = "auto",
    ) -> tuple[str, float]:
        """Plan one session; returns (id, time of its last message).

        ``end``: an end reason, "auto" (a common one at random) or None (left open).
        """
        rng = self.rng
        sid = _sid(start, rng)
        t = start
        turn_usage: list[tuple[float, int, int]] = []
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": "You are Hermes, a helpful agent.", "timestamp": t}
        ]
        for turn in turns if turns is not None else topic.turns:
            t += rng.uniform(20, 400)
            messages.append(
                {"role": "user", "content": turn.user, "timestamp": t, "token_count": len(turn.user) // 3}
            )
            t += rng.uniform(3, 40)
            if turn.tool:
                call_id = f"call_{rng.getrandbits(32):08x}"
                calls = [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": turn.tool, "arguments": _json(turn.args)},
                    }
                ]
                messages.append(
                    {
                        "role": "assistant",
                        "content": "",
                        "tool_calls": calls,
                        "reasoning": turn.reasoning or None,
                        "finish_reason": "tool_calls",
                        "token_count": rng.randint(40, 160),
                        "timestamp": t,
                    }
                )
                t += rng.uniform(1, 30)
                messages.append(
                    {
                        "role": "tool",
                        "content": turn.result,
                        "tool_name": turn.tool,
                        "tool_call_id": call_id,
                        "timestamp": t,
                    }
                )
                t += rng.uniform(2, 20)
                messages.append(
                    {
                        "role": "assistant",
                        "content": turn.answer,
                        "finish_reason": "stop",
                        "token_count": len(turn.answer) // 3,
                        "timestamp": t,
                    }
                )
            else:
                messages.append(
                    {
                        "role": "assistant",
                        "content": turn.answer,
                        "reasoning": turn.reasoning or None,
                        "finish_reason": "stop",
                        "token_count": len(turn.answer) // 3,
                        "timestamp": t,
                    }
                )
            tokens_in = rng.randint(1500, 9000)
            tokens_out = rng.randint(200, 1800)
            turn_usage.append((t, tokens_in, tokens_out))
        record: dict[str, Any] = {
            "id": sid,
            "source": source or topic.source,
            "model": topic.model,
            "started_at": start,
            "messages": messages,
        }
        if parent:
            record["parent_session_id"] = parent
        if model_config:
            record["model_config"] = model_config
        if title:
            record["title"] = title
        if end is not None:
            record["end_reason"] = rng.choice(END_REASONS) if end == "auto" else end
            record["ended_at"] = t + rng.uniform(5, 50)
        self.records[sid] = record
        price_in, price_out = PRICES.get(topic.model, (1.0, 4.0))
        self.usage[sid] = [
            (
                when,
                {
                    "input_tokens": tin,
                    "output_tokens": tout,
                    "cache_read_tokens": tin // 3,
                    "model": topic.model,
                    "estimated_cost_usd": round(tin / 1e6 * price_in + tout / 1e6 * price_out, 6),
                    "billing_provider": topic.model.split("/", 1)[0],
                    "api_call_count": 2,
                },
            )
            for when, tin, tout in turn_usage or [(start, 0, 0)]
        ]
        return sid, t

    def write(self, db: Any) -> None:
        """One `import_sessions` (parents resolve inside it), then the usage of each turn, stamped
        with the time of its answer (the store's `clock`)."""
        result = db.import_sessions(list(self.records.values()))
        if not result["ok"] or result["imported"] != len(self.records):
            raise RuntimeError(f"demo import failed: {result}")
        clock = db.clock
        try:
            for sid, turns in self.usage.items():
                for when, usage in turns:
                    db.clock = lambda when=when: when
                    db.update_token_counts(sid, **usage)
        finally:
            db.clock = clock


def _json(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False)


#: How far back the plain sessions start: past prune's default 90 days, so prune, the orders,
#: the date filters and the statistics all have something to show on a fresh demo.
SPREAD_DAYS = 120


def build_demo(path: str | Path, base: float | None = None, seed: int = 7) -> Path:
    """Write the demo database at ``path`` (which must not exist) through the store API.

    Every date is relative to ``base`` (default: now): sessions spread over the
    `SPREAD_DAYS` before it, most of them ended, a few left open (one long abandoned, the tip
    of a compression chain, the two most recent).
    """
    from hermes_tui.state import SessionDB

    path = Path(path)
    if path.exists():
        raise FileExistsError(path)
    base = time.time() if base is None else base
    rng = random.Random(seed)
    topics = _topics()
    b = _Builder(base, rng)
    # 1. A plain spread of sessions over four months, every topic a few times.
    start = base - SPREAD_DAYS * DAY
    for rep in range(3):
        for i, topic in enumerate(topics):
            start += rng.uniform(2.5, 5.5) * DAY
            title = (
                topic.title if rep == 0 else (f"{topic.title} ({rep + 1})" if rng.random() < 0.6 else None)
            )
            abandoned = rep == 0 and i == 2  # never ended: prune lists it as "still open"
            b.session(topic, start, title=title, end=None if abandoned else "auto")
            if rep == 2 and i == 3:
                break
    # 2. A compression chain of three segments; the tip is live.
    pg = topics[1]
    root, t = b.session(pg, base - 5 * DAY, title="Postgres upgrade runbook", end="compression")
    mid, t = b.session(
        pg,
        t + 60,
        title="Postgres upgrade runbook #2",
        parent=root,
        end="compression",
        turns=[
            Turn(
                "Continue: write the cutover checklist.",
                "Cutover checklist:\n\n- [ ] lag < 1 s\n- [ ] freeze writes\n- [ ] switch DSN\n- "
                "[ ] smoke tests",
            )
        ],
    )
    b.session(
        pg,
        t + 60,
        title="Postgres upgrade runbook #3",
        parent=mid,
        end=None,
        turns=[
            Turn(
                "Cutover done. Anything to clean up?",
                "Drop the subscription on 16 and the publication on 14, then decommission the old primary.",
            )
        ],
    )
    # 3. A branch of the CI topic, and a delegate sub-agent.
    ci = topics[0]
    ci_root, t = b.session(ci, base - 2 * DAY, title="CI flakiness deep dive")
    b.session(
        ci,
        t + 30,
        title="CI flakiness: try pytest-randomly",
        parent=ci_root,
        model_config={"_branched_from": ci_root},
        turns=[
            Turn(
                "Branch: what if we randomise test order instead?",
                "`pytest-randomly` would surface more order bugs; keep the id ordering fix either way.",
            )
        ],
    )
    b.session(
        topics[4],
        t + 45,
        parent=ci_root,
        source="tool",
        model_config={"_delegate_from": ci_root},
        end="delegate_complete",
        turns=[
            Turn(
                "Sub-task: list every test that sorts by created_at.",
                "Found 3: test_refund_idempotency, test_invoice_order, test_audit_trail.",
                tool="grep",
                args={"pattern": "ORDER BY created_at", "path": "tests/"},
                result="tests/test_refunds.py:88\ntests/test_invoices.py:12\ntests/test_audit.py:140",
            )
        ],
    )
    # 4. A session with a rewind and one with an in-place compaction (shown dimmed on a toggle).
    rw, rw_t = b.session(topics[9], base - 3 * 3600, title="FTS5 tokenizers (rewound)")
    b.records[rw]["ended_at"] = rw_t + 60  # after the messages appended past the rewind
    cp, cp_t = b.session(topics[2], base - 2 * 3600, title="Rust log parser (compacted)")
    b.records[cp]["ended_at"] = cp_t + 30
    # 5. The two most recent are live.
    b.session(topics[6], base - 20 * 60, title="连接池泄漏（进行中）", end=None)
    b.session(topics[7], base - 70 * 60, end=None)
    with SessionDB(path) as db:
        b.write(db)
        users = [m["id"] for m in db.get_messages(rw) if m["role"] == "user"]
        if len(users) > 1:
            db.rewind_to_message(rw, users[1])
            db.append_message(
                rw, "user", content="Actually: how do I rebuild the index?", timestamp=rw_t + 10
            )
            db.append_message(
                rw,
                "assistant",
                content="`INSERT INTO messages_fts(messages_fts) VALUES('rebuild');`",
                finish_reason="stop",
                timestamp=rw_t + 20,
            )
        db.archive_and_compact(
            cp,
            [
                {
                    "role": "user",
                    "content": "[Compaction summary] We wrote a Rust CLI that counts nginx paths.",
                    "timestamp": cp_t + 5,
                },
                {
                    "role": "assistant",
                    "content": "Summary noted. Next: add a `--top N` flag.",
                    "timestamp": cp_t + 10,
                },
            ],
        )
        db.set_meta(DEMO_META_VERSION, str(DEMO_VERSION))
        db.set_meta(DEMO_META_BASE, repr(base))
    return path


def demo_version(path: Path) -> int | None:
    """The demo version recorded in a built demo's `state_meta` (None: not one of ours)."""
    from hermes_tui.state import SessionDB

    try:
        with SessionDB(path, read_only=True, migrate=False) as db:
            value = db.get_meta(DEMO_META_VERSION)
    except Exception:
        return None
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _discard(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)


def ensure_demo_db(path: Path | None = None) -> Path:
    """Build the demo once (atomically: a temp file renamed into place) and return its path.

    A cached demo of another `DEMO_VERSION` (an older layout of the timeline, e.g. v1's
    "everything started at build time") is rebuilt; the default location also drops the files
    of older versions. Dates are relative to the moment of the build.
    """
    target = Path(path) if path is not None else demo_path()
    if path is None:
        for old in target.parent.glob("demo-state-v*.db"):
            if old != target:
                _discard(old)
    if target.exists():
        if demo_version(target) == DEMO_VERSION:
            return target
        _discard(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp_dir = Path(tempfile.mkdtemp(prefix=".demo-", dir=target.parent))
    tmp = tmp_dir / target.name
    try:
        build_demo(tmp)
        for suffix in ("-wal", "-shm"):
            side = Path(str(tmp) + suffix)
            if side.exists():
                if side.stat().st_size == 0 or suffix == "-shm":
                    side.unlink()
                else:  # not checkpointed: it belongs with the main file
                    os.replace(side, str(target) + suffix)
        os.replace(tmp, target)
    finally:
        for leftover in tmp_dir.iterdir():
            leftover.unlink()
        tmp_dir.rmdir()
    return target


def fingerprint(path: Path) -> str:
    """Short content hash (tests use it to prove browsing did not write)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
