"""Three profiles, one of them written live by the real hermes-agent 0.19.0 while we list and search."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from hermes_tui.state import SessionDB
from hermes_tui.state.federation import open_stores
from hermes_tui.state.profiles import StoreStatus, discover_stores

pytestmark = pytest.mark.peer


def _ours(path: Path, prefix: str, n: int, ts0: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with SessionDB(path) as db:
        for i in range(n):
            sid = f"{prefix}-{i}"
            db.create_session(sid, "cli")
            db.append_message(sid, "user", f"deploy the {prefix} service, take {i}", timestamp=ts0 + i)


def test_three_profiles_one_written_live_by_hermes_agent(peer_factory, tmp_path: Path) -> None:
    root = tmp_path / "hermes"
    now = time.time()
    _ours(root / "state.db", "home", 5, now - 500)
    _ours(root / "profiles" / "work" / "state.db", "work", 7, now - 400)
    agent_db = root / "profiles" / "agent" / "state.db"
    agent_db.parent.mkdir(parents=True)
    peer = peer_factory(agent_db)
    peer.call("create_session", "shared-id", "telegram")
    for i in range(3):
        peer.call("append_message", "shared-id", "user", content=f"deploy the agent service, take {i}")
    # Ids are only unique within a store: ours has a "shared-id" too.
    with SessionDB(root / "state.db") as db:
        db.create_session("shared-id", "cli")
        db.append_message("shared-id", "user", "deploy nothing", timestamp=now - 1000)

    refs = discover_stores(home=root)
    assert [(r.profile, r.status, r.schema_version) for r in refs] == [
        ("default", StoreStatus.OK, 23),
        ("agent", StoreStatus.OK, 22),
        ("work", StoreStatus.OK, 23),
    ]

    peer.run_appender("shared-id", 400, interval_s=0.002)
    try:
        with open_stores(refs, read_only=True) as fed:
            seen_counts: list[int] = []
            for _ in range(15):
                merged = fed.session_order(order="last_active")
                assert merged.counts == {"default": 6, "agent": 1, "work": 7} and not merged.errors
                rows = merged.page(0, 20)
                assert len(rows) == 14 and ("agent", "shared-id") in [(r["profile"], r["id"]) for r in rows]
                search = fed.search("appender", sort="newest")
                hits = search.page(0, 50)
                assert all(h["profile"] == "agent" for h in hits) and not search.errors
                stamps = [h["timestamp"] for h in hits]
                assert stamps == sorted(stamps, reverse=True)
                n, exact = search.counts()["agent"]
                assert exact
                seen_counts.append(n)
                time.sleep(0.02)
            assert (
                seen_counts == sorted(seen_counts) and seen_counts[0] < seen_counts[-1]
            )  # read while written
            result = peer.stop_appender(wait=True, timeout=60)
            assert not result["errors"]
            appended = len(result["appended"])

            # Quiet now: the federated search equals each store's own search merged by timestamp.
            search = fed.search("deploy", sort="newest")
            got = [(h["profile"], h["id"]) for h in search.page(0, 100)]
            per = {
                p: fed.call(p, SessionDB.search, "deploy", limit=100, sort="newest", context=False).results
                for p in fed.profiles
            }
            tagged = [(-r["timestamp"], p, pos, r["id"]) for p, rs in per.items() for pos, r in enumerate(rs)]
            assert got == [(p, i) for _t, p, _pos, i in sorted(tagged)]
            assert search.counts() == {"default": (6, True), "agent": (3, True), "work": (7, True)}
            assert {p for p, _ in got} == {"default", "agent", "work"}
            assert fed.search("appender").counts() == {
                "default": (0, True),
                "agent": (appended, True),
                "work": (0, True),
            }
            # The agent's session is the most recently active of all three stores.
            assert fed.session_order(order="last_active").pairs(0, 1) == [("agent", "shared-id")]
            both = [r for r in fed.session_order().page(0, 20) if r["id"] == "shared-id"]
            assert {r["profile"]: r["message_count"] for r in both} == {"agent": 3 + appended, "default": 1}
    finally:
        try:
            peer.stop_appender(wait=False, timeout=10)
        except Exception:  # noqa: BLE001 - already stopped above
            pass
