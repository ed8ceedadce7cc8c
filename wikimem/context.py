"""The context of one write: who made it, as part of what, and under which preconditions.

One small frozen value travels from the edge (an API view, the CLI, the
admin UI) through the host and the versioned store down to the commit, so
no layer repeats the same five keywords.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from dataclasses import dataclass, fields, replace
from datetime import datetime, timezone

from .errors import InvalidName
from .naming import validate_provenance

__all__ = ["WriteContext", "MAX_KEY_LEN", "digest", "new_run_id"]

MAX_KEY_LEN = 200
# Keys and preconditions travel in HTTP headers and git trailers: printable ASCII, no spaces.
_TOKEN_RE = re.compile(r"[\x21-\x7e]+")


@dataclass(frozen=True)
class WriteContext:
    """Provenance and preconditions of a write.

    - ``run``: the memorize run or batch it belongs to (``Wikimem-Run``);
    - ``actor``: the character, worker or operator (``Wikimem-Actor``, commit author);
    - ``source_conv``: the conversation it came from (item metadata and ``Wikimem-Source-Conv``);
    - ``idempotency_key``: a retry with the same key replays the first result and writes nothing;
    - ``if_match``: an item etag or a commit id that must still hold, else nothing is written;
    - ``if_none_match``: create-only (``If-None-Match: *``): the item must not exist yet, else nothing
      is written — checked with ``if_match`` under the owner's lock, never as a read before the write;
    - ``fingerprint``: what the request was (kind, target, body), bound to its idempotency key;
    - ``staged``: the write goes on probation — onto the branch ``staged/<run>``, not ``main``
      (SPEC §10, "Runs on probation"; the host's ``Owner`` routes it).
    """

    run: str | None = None
    actor: str | None = None
    source_conv: str | None = None
    idempotency_key: str | None = None
    if_match: str | None = None
    fingerprint: str | None = None
    if_none_match: bool = False
    staged: bool = False

    def __post_init__(self) -> None:
        # Every entry point (API, admin UI, CLI, library) builds one of these: validate here, once.
        for name in ("run", "actor", "source_conv"):
            object.__setattr__(self, name, validate_provenance(getattr(self, name), name))
        for name, limit in (("idempotency_key", MAX_KEY_LEN), ("if_match", 128), ("fingerprint", 128)):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not _TOKEN_RE.fullmatch(value)
                                      or len(value) > limit):
                raise InvalidName(f"{name} must be 1-{limit} printable ASCII characters without spaces")
        if not isinstance(self.staged, bool):
            raise TypeError(f"staged must be True or False, got {type(self.staged).__name__}")
        if not isinstance(self.if_none_match, bool):
            raise TypeError(f"if_none_match must be True or False, got {type(self.if_none_match).__name__}")
        if self.if_none_match and self.if_match is not None:
            raise ValueError("give if_match (the item must be as seen) or if_none_match (it must not exist), "
                             "not both")

    @classmethod
    def of(cls, ctx: WriteContext | None = None, **overrides) -> WriteContext:
        """``ctx`` (or an empty context) with the given non-None fields set."""
        base = ctx if ctx is not None else cls()
        unknown = set(overrides) - {f.name for f in fields(cls)}
        if unknown:
            raise TypeError(f"unknown write context field(s): {', '.join(sorted(unknown))}")
        changes = {k: v for k, v in overrides.items() if v is not None}
        return replace(base, **changes) if changes else base

    def bound(self, *request: object) -> WriteContext:
        """This context with its fingerprint: the one given, or a digest of the request and the provenance.

        A retry with the same idempotency key must be the same request; the
        fingerprint is what "the same" means (kind, target, body).
        """
        if self.fingerprint is not None or self.idempotency_key is None:
            return self
        staged = ("staged",) if self.staged else ()  # (a direct write's fingerprint stays what it always was)
        return replace(self, fingerprint=digest(*request, self.run, self.actor, self.source_conv, *staged))


def digest(*parts: object) -> str:
    """A short, stable hash of JSON-able parts (a request's fingerprint)."""
    text = json.dumps(parts, ensure_ascii=True, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:32]


def new_run_id() -> str:
    """A fresh, sortable run id: ``run_<UTC time>_<random>``."""
    return f"run_{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}_{secrets.token_hex(3)}"
