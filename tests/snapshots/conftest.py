"""Fixtures for the snapshot tests (shared with the Pilot tests)."""

from app._support import demo_db, demo_master, deterministic_env

__all__ = ["demo_db", "demo_master", "deterministic_env"]
