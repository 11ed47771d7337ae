"""Fixtures for the app tests (defined in `_support` so the snapshot tests share them)."""

from ._support import demo_db, demo_master, deterministic_env

__all__ = ["demo_db", "demo_master", "deterministic_env"]
