"""Content prefilter: required literals of a regex, and a scanner that never misses a match."""

from __future__ import annotations

import pytest

from capdaemon.classify.compiled import ContentScanner
from capdaemon.classify.literals import required_literals
from capdaemon.config import DEFAULT_EXTERNAL_CONTENT_PATTERNS, DEFAULT_SECRET_CONTENT_PATTERNS

LITERALS = [
    pytest.param(r"\bsmtplib\b", {"smtplib"}, id="word"),
    pytest.param(r"api\.x\.com|graph\.facebook\.com", {"api.x.com", "graph.facebook.com"},
                 id="branch"),
    pytest.param(r"\bxox[ab]-\w+", {"xoxa-", "xoxb-"}, id="small-class-expands"),
    pytest.param(r"(ab|cd)ef", {"abef", "cdef"}, id="group-product"),
    pytest.param(r"(?i)secret", None, id="ignorecase-global"),
    pytest.param(r"x(?i:abc)y", None, id="ignorecase-scoped"),
    pytest.param(r"\w+@\w+", None, id="no-literal"),
    pytest.param(r"a", None, id="too-short"),
    pytest.param(r"(", None, id="invalid"),
]  # fmt: skip


@pytest.mark.parametrize(("pattern", "expected"), LITERALS)
def test_required_literals(pattern: str, expected: set[str] | None) -> None:
    """Literals are exact alternatives one of which every match contains; unknown → None."""
    got = required_literals(pattern)
    assert (set(got) if got is not None else None) == expected


SAMPLES = [
    "import smtplib",
    "os.system('sendmail x')",
    "s = SMTP('host')",
    "url = 'https://hooks.slack.com/services/T0/B0/x'",
    "u = 'https://discordapp.com/api/webhooks/1/x'",
    "WEBHOOK_URL = 1".lower(),
    "requests.post( 'https://example.com/x')",
    'httpx.post("http://x")',
    "call('https://api.twitter.com/2/tweets')",
    "-----BEGIN OPENSSH PRIVATE KEY-----",
    "t = 'ghs_" + "a" * 36 + "'",
    "t = github_pat_" + "A" * 40,
    "AKIA" + "ABCDEFGHIJKLMNOP",
    "xoxb-1234567890-abc",
    "sk-" + "x" * 24,
    "AIza" + "y" * 35,
    "glpat-" + "z" * 20,
]


@pytest.mark.parametrize("line", SAMPLES)
def test_scanner_finds_every_default_pattern(line: str) -> None:
    """Each default content pattern is found through the prefilter."""
    scanner = ContentScanner(
        DEFAULT_EXTERNAL_CONTENT_PATTERNS + DEFAULT_SECRET_CONTENT_PATTERNS, lambda i, p: p
    )
    assert scanner.scan(["x = 1", line]) != []


def test_scanner_with_patterns_that_have_no_literal() -> None:
    """Patterns without literals (or case-insensitive ones) still match via the regex prefilter."""
    scanner = ContentScanner([r"(?i)bearer\s+\w+", r"\b\d{16}\b"], lambda i, p: str(i))
    assert scanner.scan(["Authorization: BEARER abc"]) == [(0, "0")]
    assert scanner.scan(["card 1234567812345678"]) == [(0, "1")]
    assert scanner.scan(["nothing here"]) == []
