"""Deterministic synthetic Hermes corpus (seed 1337), identical for every implementation.

Stdlib only: it is imported by the benchmark workers under both interpreters (the upstream peer
venv and ours), so both build their database from exactly the same sessions, messages and
timestamps. The vocabulary is chosen so each benchmark query class (``QUERIES``) has a
realistic number of hits (e.g. ``deploy*`` matches about a third of messages, the rare word
about one message in five thousand, CJK terms only in the ~15% CJK messages).
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Iterator
from typing import Any

SEED = 1337
SIZES = {
    "tiny": 2_000,
    "small": 10_000,
    "medium": 100_000,
    "large": 1_000_000,
    "wide": 1_000_000,
    "huge": 10_000_000,
}
# Median messages per session: real stores (45) and a gateway-heavy store of many short chats
# ("wide": 1M messages in ~100k sessions, the browser's many-sessions case).
SESSION_MEDIAN = {"wide": 7}
T_END = 1_748_736_000.0  # 2025-06-01T00:00:00Z: fixed so the corpus never depends on "now"
SPAN_S = 180 * 86400
SOURCES = (("cli", 0.45), ("telegram", 0.25), ("discord", 0.18), ("slack", 0.12))
MODELS = (
    ("anthropic/claude-sonnet-4", 0.35),
    ("openai/gpt-4.1", 0.2),
    ("anthropic/claude-opus-4", 0.12),
    ("google/gemini-2.5-pro", 0.13),
    ("deepseek/deepseek-chat", 0.1),
    ("qwen/qwen3-coder", 0.1),
)
PRICES = {  # USD per 1M tokens (input, output); only used to make costs plausible
    "anthropic/claude-sonnet-4": (3.0, 15.0),
    "openai/gpt-4.1": (2.0, 8.0),
    "anthropic/claude-opus-4": (15.0, 75.0),
    "google/gemini-2.5-pro": (1.25, 10.0),
    "deepseek/deepseek-chat": (0.27, 1.1),
    "qwen/qwen3-coder": (0.4, 1.6),
}

# (name, query) — the benchmark query classes; the words are planted below.
QUERIES: list[tuple[str, str]] = [
    ("common_word", "error"),
    ("two_words_and", "docker container"),
    ("rare_word", "zeppelin"),
    ("no_hits", "xylophonist"),
    ("phrase", '"connection refused"'),
    ("prefix", "deploy*"),
    ("or", "docker OR kubernetes"),
    ("not", "error NOT timeout"),
    ("hyphenated", "pre-commit"),
    ("dotted_file", "config.yaml"),
    ("cjk_1char_zh", "错"),
    ("cjk_2char_zh", "部署"),
    ("cjk_2char_ko", "배포"),
    ("cjk_3char_zh", "数据库"),
    ("cjk_4char_ja", "デプロイ"),
    ("cjk_6char_ko", "데이터베이스"),
    ("cjk_or_2char", "部署 OR 缓存"),
    ("mixed_ascii_cjk", "docker 部署"),
    ("garbage_quotes", 'deploy "fails (unbalanced'),
    ("garbage_ops", 'AND OR "" *** :: ('),
]

_NOUNS = (
    "server",
    "build",
    "pipeline",
    "cache",
    "database",
    "container",
    "request",
    "config",
    "service",
    "worker",
    "queue",
    "branch",
    "test",
    "migration",
    "index",
    "cluster",
    "endpoint",
    "token",
    "session",
    "script",
    "module",
    "function",
    "report",
    "backup",
    "certificate",
    "webhook",
)
_VERBS = (
    "check",
    "restart",
    "update",
    "inspect",
    "rebuild",
    "fix",
    "review",
    "rollback",
    "profile",
    "refactor",
    "document",
    "measure",
    "retry",
    "patch",
    "upgrade",
    "clean",
)
_ADJ = (
    "slow",
    "broken",
    "new",
    "stale",
    "flaky",
    "large",
    "remote",
    "local",
    "nightly",
    "primary",
    "secondary",
    "cached",
    "missing",
    "noisy",
    "fresh",
    "legacy",
)
_DEPLOY = ("deploy", "deployment", "deployed", "deploying", "deploys")
_FILES = (
    "config.yaml",
    "main.py",
    "package.json",
    "Dockerfile",
    "settings.toml",
    "README.md",
    "app.log",
    "docker-compose.yml",
    "index.ts",
    "Makefile",
)
_ERRORS = (
    "error: connection refused",
    "timeout while waiting for the lock",
    "permission denied",
    "ModuleNotFoundError: no module named requests",
    "exit status 1",
    "out of memory",
)
_TOOLS = (
    "terminal",
    "read_file",
    "write_file",
    "search_files",
    "web_search",
    "browser_navigate",
    "patch",
    "execute_code",
)
_ZH = (
    "部署失败了，请检查日志。",
    "数据库连接超时。",
    "缓存已经清理完毕。",
    "这里有一个错误需要修复。",
    "服务器重启以后恢复正常。",
    "配置文件已经更新。",
    "请帮我查看构建结果。",
    "测试全部通过了。",
    "内存不足导致进程退出。",
    "我们明天再部署新版本。",
    "索引重建需要一点时间。",
    "用户反馈页面加载很慢。",
)
_JA = (
    "デプロイが失敗しました。",
    "データベースの接続がタイムアウトしました。",
    "キャッシュをクリアしました。",
    "エラーが発生しています。",
    "サーバーを再起動してください。",
    "設定ファイルを更新しました。",
    "テストはすべて成功しました。",
    "ログを確認してもらえますか。",
    "新しいバージョンを明日デプロイします。",
)
_KO = (
    "배포가 실패했습니다.",
    "데이터베이스 연결이 시간 초과되었습니다.",
    "캐시를 삭제했습니다.",
    "오류가 발생했습니다.",
    "서버를 다시 시작해 주세요.",
    "설정 파일을 업데이트했습니다.",
    "테스트가 모두 통과했습니다.",
    "로그를 확인해 주세요.",
    "내일 새 버전을 배포합니다.",
)
_TITLE_A = ("Fix", "Debug", "Plan", "Review", "Tune", "Migrate", "Explain", "Write", "Refactor", "Ship")
_TITLE_B = ("the", "our", "nightly", "flaky", "staging", "prod", "local", "legacy")


def _pick(rng: random.Random, weighted: tuple[tuple[str, float], ...]) -> str:
    r = rng.random()
    acc = 0.0
    for value, w in weighted:
        acc += w
        if r < acc:
            return value
    return weighted[-1][0]


def _sentence(rng: random.Random) -> str:
    """One English sentence; the planted words come in at fixed rates."""
    parts = [rng.choice(("We should", "Please", "I will", "Can you", "Let's", "Then", "First,", "Now"))]
    parts.append(rng.choice(_VERBS))
    parts.append("the")
    parts.append(rng.choice(_ADJ))
    parts.append(rng.choice(_NOUNS))
    r = rng.random()
    if r < 0.10:
        parts.append("before the " + rng.choice(_DEPLOY))
    elif r < 0.13:
        parts.append("in the docker container")
    elif r < 0.15:
        parts.append("on kubernetes")
    elif r < 0.17:
        parts.append("with docker")
    if rng.random() < 0.04:
        parts.append("because of an error")
    if rng.random() < 0.02:
        parts.append("after a timeout")
    if rng.random() < 0.025:
        parts.append("via the pre-commit hook")
    if rng.random() < 0.03:
        parts.append("in " + rng.choice(_FILES))
    if rng.random() < 0.00006:
        parts.append("like a zeppelin")
    return " ".join(parts) + rng.choice((".", ".", ".", "?", "!"))


def _prose(rng: random.Random, lo: int = 2, hi: int = 7) -> str:
    return " ".join(_sentence(rng) for _ in range(rng.randint(lo, hi)))


def _code(rng: random.Random) -> str:
    fn = rng.choice(_VERBS) + "_" + rng.choice(_NOUNS)
    body = [
        f"def {fn}(path: str) -> int:",
        f'    """{rng.choice(_VERBS).title()} the {rng.choice(_NOUNS)}."""',
    ]
    for _ in range(rng.randint(4, 12)):
        body.append(f"    {rng.choice(_NOUNS)} = load({rng.choice(_FILES)!r})")
    if rng.random() < 0.3:
        body.append("    raise RuntimeError('deploy error')")
    body.append("    return 0")
    return "Here is the change:\n```python\n" + "\n".join(body) + "\n```\n" + _sentence(rng)


def _cjk(rng: random.Random) -> str:
    lang = rng.random()
    pool = _ZH if lang < 0.45 else (_JA if lang < 0.75 else _KO)
    text = "".join(rng.choice(pool) for _ in range(rng.randint(3, 12)))
    if rng.random() < 0.25:  # mixed ascii + cjk, as people really write
        text = f"docker {rng.choice(_DEPLOY)} " + text
    return text


def _tool_output(rng: random.Random, tool: str) -> str:
    if rng.random() < 0.18:
        out = rng.choice(_ERRORS) + "\n" + _sentence(rng)
        code = 1
    else:
        out = "\n".join(
            f"{rng.choice(_FILES)}: {rng.choice(_ADJ)} {rng.choice(_NOUNS)} ok"
            for _ in range(rng.randint(6, 26))
        )
        code = 0
    return json.dumps({"tool": tool, "exit_code": code, "output": out, "duration_ms": rng.randint(3, 9000)})


def _messages(rng: random.Random, sid: str, n: int, t0: float) -> tuple[list[dict[str, Any]], float]:
    """``n`` messages: user/assistant turns with tool calls (~28% tool rows), ~15% CJK."""
    msgs: list[dict[str, Any]] = []
    t = t0
    cjk_session = rng.random() < 0.24  # CJK clusters by user, not uniformly
    call_no = 0
    while len(msgs) < n:
        t += rng.uniform(2, 90)
        cjk = rng.random() < (0.85 if cjk_session else 0.03)
        msgs.append(
            {
                "role": "user",
                "content": _cjk(rng) if cjk else _prose(rng, 2, 8),
                "timestamp": t,
                "token_count": rng.randint(10, 400),
            }
        )
        steps = rng.choice((0, 1, 1, 2, 2, 3))
        for _ in range(steps):
            if len(msgs) + 2 > n:
                break
            tool = rng.choice(_TOOLS)
            call_no += 1
            call_id = f"call_{sid[-6:]}_{call_no}"
            args = (
                {"path": rng.choice(_FILES)}
                if tool != "terminal"
                else {"command": f"make {rng.choice(_VERBS)}"}
            )
            t += rng.uniform(1, 20)
            msgs.append(
                {
                    "role": "assistant",
                    "content": _cjk(rng) if cjk else _sentence(rng),
                    "timestamp": t,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": tool, "arguments": json.dumps(args)},
                        }
                    ],
                    "finish_reason": "tool_calls",
                    "token_count": rng.randint(20, 300),
                }
            )
            t += rng.uniform(0.2, 30)
            msgs.append(
                {
                    "role": "tool",
                    "content": _tool_output(rng, tool),
                    "tool_name": tool,
                    "tool_call_id": call_id,
                    "timestamp": t,
                    "token_count": rng.randint(20, 900),
                }
            )
        if len(msgs) >= n:
            break
        t += rng.uniform(2, 60)
        r = rng.random()
        content = _cjk(rng) if cjk else (_code(rng) if r < 0.18 else _prose(rng, 8, 22))
        msgs.append(
            {
                "role": "assistant",
                "content": content,
                "timestamp": t,
                "finish_reason": "stop",
                "token_count": rng.randint(50, 1200),
            }
        )
    return msgs[:n], t


def _session_len(rng: random.Random, median: int = 45) -> int:
    lo, hi = (10, 400) if median >= 45 else (2, 60)
    return max(lo, min(hi, int(round(rng.lognormvariate(math.log(median), 0.86)))))


def iter_sessions(size: str | int, seed: int = SEED) -> Iterator[dict[str, Any]]:
    """Yield sessions (dicts with a ``messages`` list) in creation order; parents before children.

    Keys follow upstream's export format (``id, source, model, model_config, parent_session_id,
    started_at, ended_at, end_reason, title, input_tokens, output_tokens, estimated_cost_usd,
    messages``) plus ``edge_kind`` (``compression | branch | delegate | None``).
    """
    target = SIZES[size] if isinstance(size, str) else int(size)
    median = SESSION_MEDIAN.get(size, 45) if isinstance(size, str) else 45
    rng = random.Random(seed)
    produced = 0
    serial = 0
    titles: set[str] = set()
    while produced < target:
        # a root session, possibly followed by its compression chain / a branch / a delegate
        # Stores grow chronologically: roots start in order (with jitter), as a real agent appends.
        start = T_END - SPAN_S + (produced / target) * (SPAN_S - 3 * 86400) + rng.random() * 3600
        r = rng.random()
        plan: list[str | None] = [None]
        if r < 0.040:
            plan += ["compression"] * rng.randint(1, 3)
        elif r < 0.050:
            plan.append("branch")
        elif r < 0.058:
            plan.append("delegate")
        parent: dict[str, Any] | None = None
        root_title: str | None = None
        for depth, kind in enumerate(plan):
            if produced >= target:
                break
            serial += 1
            source = _pick(rng, SOURCES) if parent is None else parent["source"]
            model = _pick(rng, MODELS) if parent is None else parent["model"]
            sid = (
                time.strftime("%Y%m%d_%H%M%S", time.gmtime(start)) + f"_{rng.getrandbits(24):06x}{serial:05d}"
            )
            n = min(_session_len(rng, median), target - produced)
            msgs, last_t = _messages(rng, sid, n, start)
            produced += len(msgs)
            model_config: dict[str, Any] | None = None
            if kind == "branch":
                model_config = {"_branched_from": parent["id"]} if parent else None
            elif kind == "delegate":
                model_config = {"_delegate_from": parent["id"]} if parent else None
            title: str | None = None
            if kind == "compression" and root_title:
                title = f"{root_title} #{depth + 1}"
            elif rng.random() < 0.58:
                title = (
                    f"{rng.choice(_TITLE_A)} {rng.choice(_TITLE_B)} {rng.choice(_ADJ)} {rng.choice(_NOUNS)}"
                )
                if title in titles:
                    title = f"{title} {serial}"
            if title is not None:
                titles.add(title)
            if depth == 0:
                root_title = title
            in_tok = sum(m.get("token_count") or 0 for m in msgs if m["role"] != "assistant") * 3
            out_tok = sum(m.get("token_count") or 0 for m in msgs if m["role"] == "assistant")
            pin, pout = PRICES[model]
            next_is_compression = depth + 1 < len(plan) and plan[depth + 1] == "compression"
            if next_is_compression:
                ended_at: float | None = last_t + 1.0
                end_reason: str | None = "compression"
            elif kind is None and depth + 1 < len(plan) and plan[depth + 1] == "branch":
                ended_at, end_reason = last_t + 1.0, "branched"
            elif rng.random() < 0.05:
                ended_at, end_reason = None, None  # never ended (crashed / still open)
            else:
                ended_at, end_reason = (
                    last_t + rng.uniform(1, 600),
                    rng.choice(("user_exit", "user_exit", "idle", "new_session")),
                )
            session = {
                "id": sid,
                "source": source,
                "model": model,
                "model_config": model_config,
                "parent_session_id": parent["id"] if parent is not None and kind else None,
                "edge_kind": kind,
                "started_at": start,
                "ended_at": ended_at,
                "end_reason": end_reason,
                "title": title,
                "input_tokens": in_tok,
                "output_tokens": out_tok,
                "estimated_cost_usd": round(in_tok * pin / 1e6 + out_tok * pout / 1e6, 6),
                "messages": msgs,
            }
            yield session
            if kind == "delegate" or kind == "branch":
                parent = parent  # siblings hang off the root
            else:
                parent = session
            start = (ended_at or last_t) + rng.uniform(1, 3600)


def stats(size: str | int) -> dict[str, Any]:
    """Corpus summary (the table in upstream-benchmarks.md), to check the generator's shape."""
    n_s = n_m = children = titled = cjk = tool = chars = 0
    lens: list[int] = []
    src: dict[str, int] = {}
    never_ended = 0
    for s in iter_sessions(size):
        n_s += 1
        lens.append(len(s["messages"]))
        children += s["parent_session_id"] is not None
        titled += s["title"] is not None
        never_ended += s["ended_at"] is None
        src[s["source"]] = src.get(s["source"], 0) + 1
        for m in s["messages"]:
            n_m += 1
            c = m["content"] or ""
            chars += len(c)
            tool += m["role"] == "tool"
            cjk += any("\u3040" <= ch <= "\u9fff" or "\uac00" <= ch <= "\ud7af" for ch in c[:200])
    lens.sort()
    return {
        "messages": n_m,
        "sessions": n_s,
        "children_pct": round(100 * children / n_s, 1),
        "titled_pct": round(100 * titled / n_s, 1),
        "cjk_pct": round(100 * cjk / n_m, 1),
        "tool_pct": round(100 * tool / n_m, 1),
        "avg_chars": round(chars / n_m),
        "median_len": lens[len(lens) // 2],
        "never_ended_pct": round(100 * never_ended / n_s, 1),
        "sources_pct": {k: round(100 * v / n_s, 1) for k, v in sorted(src.items())},
    }


if __name__ == "__main__":
    import sys

    print(json.dumps(stats(sys.argv[1] if len(sys.argv) > 1 else "small"), indent=1))
