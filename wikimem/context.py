"""The context of one write: who made it, as part of what, and under which preconditions.

One small frozen value travels from the edge (an API view, the CLI, the
admin UI) through the host and the versioned store down to the commit, so
no layer repeats the same five keywords.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

__all__ = ["WriteContext"]


@dataclass(frozen=True)
class WriteContext:
    """Provenance and preconditions of a write.

    - ``run``: the memorize run or batch it belongs to (``Wikimem-Run``);
    - ``actor``: the character, worker or operator (``Wikimem-Actor``, commit author);
    - ``source_conv``: the conversation it came from (item metadata and ``Wikimem-Source-Conv``);
    - ``idempotency_key``: a retry with the same key replays the first result and writes nothing;
    - ``if_match``: an item etag or a commit id that must still hold, else nothing is written;
    - ``fingerprint``: what the request was (kind, target, body), bound to its idempotency key.
    """

    run: str | None = None
    actor: str | None = None
    source_conv: str | None = None
    idempotency_key: str | None = None
    if_match: str | None = None
    fingerprint: str | None = None

    @classmethod
    def of(cls, ctx: "WriteContext | None" = None, **overrides) -> "WriteContext":
        """``ctx`` (or an empty context) with the given non-None fields set."""
        base = ctx if ctx is not None else cls()
        unknown = set(overrides) - {f.name for f in fields(cls)}
        if unknown:
            raise TypeError(f"unknown write context field(s): {', '.join(sorted(unknown))}")
        changes = {k: v for k, v in overrides.items() if v is not None}
        return replace(base, **changes) if changes else base

    def commit_info(self) -> dict[str, str]:
        """The fields a commit records (run, actor, source_conv, idempotency key), without the empty ones."""
        pairs = (("run", self.run), ("actor", self.actor), ("source_conv", self.source_conv),
                 ("idempotency_key", self.idempotency_key))
        return {k: v for k, v in pairs if v is not None}
