"""Keep secrets (tokens, JWTs, private keys) out of exception text and log events."""

from __future__ import annotations

import re
import threading
from collections import deque
from typing import Any

REDACTED = "***"
_PATTERNS = (
    re.compile(
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(-----END [A-Z ]*PRIVATE KEY-----|$)", re.DOTALL
    ),
    re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr|v1)_[A-Za-z0-9_.]{16,}"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"),
    re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),  # JWT
    re.compile(r"(?i)\b(authorization|x-access-token)\s*[:=]\s*\S+(\s+\S+)?"),
)


class Scrubber:
    """Replaces known secret values and secret-looking strings with `***`."""

    def __init__(self, max_secrets: int = 256) -> None:
        self._secrets: deque[str] = deque(maxlen=max_secrets)
        self._lock = threading.Lock()

    def add(self, secret: str | bytes | None) -> None:
        """Remember a secret value (a token, a key) to redact wherever it appears."""
        if not secret:
            return
        text = secret.decode("utf-8", "replace") if isinstance(secret, bytes) else secret
        with self._lock:
            if text not in self._secrets:
                self._secrets.append(text)
            for line in text.splitlines():  # a PEM key also leaks line by line
                line = line.strip()
                if len(line) >= 16 and "PRIVATE KEY" not in line and line not in self._secrets:
                    self._secrets.append(line)

    def scrub(self, text: Any) -> str:
        """`text` as a string with every secret replaced."""
        out = str(text)
        with self._lock:
            secrets = sorted(self._secrets, key=len, reverse=True)
        for s in secrets:
            if s in out:
                out = out.replace(s, REDACTED)
        for pat in _PATTERNS:
            out = pat.sub(REDACTED, out)
        return out
