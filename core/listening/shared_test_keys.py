"""The secrets of a shared test: the link (what listeners open), the owner key (what the owner's page
holds) and each listener's key, made by ``secrets``; the store keeps only their SHA-256."""

from __future__ import annotations

import hashlib
import re

from core.listening.shared_test_schema import SharedTestError

LINK_BYTES = 24  # 192 random bits per link (the issue asks for at least 128)
OWNER_BYTES = 32
LISTENER_BYTES = 24
_KEY = re.compile(r"[A-Za-z0-9_-]{20,128}")  # what secrets.token_urlsafe makes of them


def key_hash(key, what: str = "link") -> str:
    """The stored form of a link or key; SharedTestError for anything that cannot be one."""
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise SharedTestError(
            f"This {what} is not valid: open the link you were given again.",
            "unknown" if what == "link" else "forbidden",
        )
    return hashlib.sha256(key.encode("ascii")).hexdigest()
