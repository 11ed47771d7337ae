"""`hermes_tui.redact`: exactly what `--redact` promises to catch, and what it documents it
misses (the README's list; a change to either side shows here)."""

from __future__ import annotations

import pytest

from hermes_tui.redact import redact

CAUGHT = [
    ("key sk-proj-AbCdEf1234567890GhIjKlMnOp end", "key [secret] end"),
    ("sk-ant-api03-AbCdEfGhIjKlMnOpQrSt1234", "[secret]"),
    ("ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", "[secret]"),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "[secret]"),
    ("glpat-abcdefghij0123456789", "[secret]"),
    ("xoxb-1234567890-abcdefghij", "[secret]"),
    ("AKIAIOSFODNN7EXAMPLE", "[secret]"),
    ("AIzaSyA1234567890abcdefghijklmnopqrstuv", "[secret]"),
    ("hf_abcdefghijklmnopqrstuvwxyz0123456789", "[secret]"),
    ("sk_live_abcdefghij0123456789", "[secret]"),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w", "[secret]"),
    ("AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "[secret]"),  # 32+ mixed-case letters and digits
    ("OPENAI_API_KEY=plainvalue99", "OPENAI_API_KEY=[secret]"),
    ('"password": "hunter22"', '"password": "[secret]"'),
    ("client_secret: s3cr3t-value", "client_secret: [secret]"),
    ("Authorization: Bearer abcdefghijklmnop1234", "Authorization: Bearer [secret]"),
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic [secret]"),
    ("https://user:pa55@example.com/x", "https://[credentials]@example.com/x"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----", "[private key]"),
    ("mail bob.smith+x@example.co.uk!", "mail [email]!"),
    ("/home/alice/proj and /Users/Bob/x", "[home]/proj and [home]/x"),
    ("C:\\Users\\eve\\a", "[home]\\a"),
    ("/root/.ssh", "[home]/.ssh"),
    ("~alice/notes", "[home]/notes"),
]
MISSED = [
    "password hunter2",  # a secret in prose, not `name=value`
    "pin: 1234",  # a value shorter than 6 characters
    "token abcdef",  # no separator after the name
    "0123456789abcdef0123456789abcdef01234567",  # hex: git hashes, digests (no upper case)
    "123e4567-e89b-12d3-a456-426614174000",  # UUIDs
    "Ab1Cd2Ef3Gh4",  # a short unprefixed key
    "alice at example dot com",  # an obfuscated address
    "/srv/alice/proj",  # a folder that is not under a home root (unless it is this machine's home)
    "call me on +1 555 0100",  # phone numbers, names, hostnames, IP addresses
]


@pytest.mark.parametrize(("text", "expected"), CAUGHT)
def test_caught(text: str, expected: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/nonexistent-home")
    assert redact(text) == expected


@pytest.mark.parametrize("text", MISSED)
def test_documented_misses(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/nonexistent-home")
    assert redact(text) == text


def test_this_machines_home_wherever_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/srv/carol")
    assert redact("cd /srv/carol/proj") == "cd [home]/proj"


def test_ordinary_words_are_kept() -> None:
    text = "The author: Shakespeare. max_tokens: 4096. The auth flow and token count: 12 work."
    assert redact(text) == text
