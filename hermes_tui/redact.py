"""`--redact`: what a shared export hides — home paths, e-mail addresses and secrets that look
like API keys or tokens — each replaced by a placeholder naming what was there.

Pattern-based, so it is a net, not a guarantee (the README says exactly what it catches and
what it misses). It runs on the text before anything else (escaping, Markdown), so a secret
split by markup is still one string here. Knows nothing of HTML or of the store.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

HOME = "[home]"
EMAIL = "[email]"
SECRET = "[secret]"
PRIVATE_KEY = "[private key]"
CREDENTIALS = "[credentials]"

#: PEM private keys, whole (RSA, EC, OPENSSH, ENCRYPTED, …), and a begin line without its end.
_PRIVATE_KEY_RE = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY-----|.*\Z)", re.DOTALL
)
#: `scheme://user:password@host`: the user and password.
_URL_CREDENTIALS_RE = re.compile(r"(?<=://)[^\s/:@]+:[^\s/@]+(?=@)")
#: Tokens with a well-known prefix (OpenAI/Anthropic `sk-`, GitHub, GitLab, Slack, AWS key ids,
#: Google API keys, Hugging Face, Stripe, npm, PyPI, Telegram bot tokens) and JWTs.
_PREFIXED_RE = re.compile(
    r"\b(?:"
    r"sk-[A-Za-z0-9_-]{16,}"
    r"|(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
    r"|glpat-[A-Za-z0-9_-]{20,}"
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|AIza[0-9A-Za-z_-]{35}"
    r"|hf_[A-Za-z0-9]{30,}"
    r"|(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"
    r"|npm_[A-Za-z0-9]{36}"
    r"|pypi-[A-Za-z0-9_-]{50,}"
    r"|\d{8,10}:AA[A-Za-z0-9_-]{33}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
    r")"
)
#: A value given to a name that says it is secret: `api_key=…`, `"token": "…"`, `password: …`,
#: `Authorization: Bearer …` (the name is kept, the value replaced).
_NAMED_RE = re.compile(
    r"(?i)(?P<name>\b[\w-]*(?:api[_-]?key|apikey|secret|token|passw(?:or)?d|passwd|authorization|credential)s?[\w-]*"
    r"[\"']?\s*[:=]\s*(?:bearer\s+|basic\s+)?[\"']?)"
    r"(?P<value>[^\s\"',;]{6,})"
)
#: `Bearer …` / `Basic …` anywhere (headers pasted into a chat).
_BEARER_RE = re.compile(r"(?i)(?<=\bbearer )[A-Za-z0-9._~+/=-]{12,}|(?<=\bbasic )[A-Za-z0-9._~+/=-]{12,}")
#: Anything else that looks like a key: 32+ characters of a key alphabet mixing upper case,
#: lower case and digits (hex digests, git hashes and UUIDs have no upper case: kept).
_LONG_RE = re.compile(r"(?<![A-Za-z0-9_+/=-])[A-Za-z0-9_+/=-]{32,}(?![A-Za-z0-9_+/=-])")
_EMAIL_RE = re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
#: Home folders: `/home/NAME`, `/Users/NAME`, `/root`, `C:\Users\NAME` (and `/`-written), `~NAME`.
_HOME_RE = re.compile(
    r"(?:/home/[^/\s\"'`<>:]+|/Users/[^/\s\"'`<>:]+|(?<![\w/])/root(?=/|\b)|[A-Za-z]:[\\/]+Users[\\/]+[^\\/\s\"'`<>:]+"
    r"|(?<![\w/])~[a-z_][a-z0-9_-]*(?=/))"
)


def _is_keylike(text: str) -> bool:
    return (
        any(c.isupper() for c in text) and any(c.islower() for c in text) and any(c.isdigit() for c in text)
    )


def _long(match: re.Match[str]) -> str:
    return SECRET if _is_keylike(match.group(0)) else match.group(0)


def _named(match: re.Match[str]) -> str:
    return match.group("name") + SECRET


def _own_home() -> list[str]:
    """This machine's home folder too, wherever it is (`/var/lib/x`, `/srv/me`)."""
    try:
        home = str(Path.home())
    except (RuntimeError, KeyError):
        return []
    return [home] if len(home) > 1 else []


_STEPS: tuple[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]], ...] = (
    (_PRIVATE_KEY_RE, PRIVATE_KEY),
    (_URL_CREDENTIALS_RE, CREDENTIALS),
    (_PREFIXED_RE, SECRET),
    (_BEARER_RE, SECRET),
    (_NAMED_RE, _named),
    (_LONG_RE, _long),
    (_EMAIL_RE, EMAIL),
    (_HOME_RE, HOME),
)


def redact(text: str) -> str:
    """`text` with private keys, URL credentials, tokens, secret-named values, long key-like
    strings, e-mail addresses and home folders replaced by placeholders."""
    if not text:
        return text
    for pattern, repl in _STEPS:
        text = pattern.sub(repl, text)
    for home in _own_home():
        text = text.replace(home, HOME)
    return text
