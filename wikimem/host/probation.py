"""Which writes go on probation: :class:`StagingPolicy`, an owner's write policy (``WIKIMEM_STAGED_*``, read by
:mod:`wikimem.host.config`): which actors' and which tokens' writes are staged, which tokens read staged runs by
default, the delay after which an unheld staged run is approved (0: never) and the age at which an unreviewed one
expires (is discarded). The runs across owners: :class:`~wikimem.host.fleet.Probation`."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any

__all__ = ["StagingPolicy"]


def _patterns(text: str | tuple[str, ...] | None) -> tuple[str, ...]:
    if text is None:
        return ()
    items = text.split(",") if isinstance(text, str) else text
    return tuple(p.strip() for p in items if p and p.strip())


def _matches(name: str | None, patterns: tuple[str, ...]) -> bool:
    return bool(name) and any(fnmatch.fnmatchcase(name or "", p) for p in patterns)


@dataclass(frozen=True)
class StagingPolicy:
    """Which writes go on probation, and what happens to runs nobody reviews.

    ``actors`` / ``tokens``: shell patterns (``memorize-v7``, ``memorize-exp-*``) of write actors / token names
    whose writes are staged; ``read_tokens``: token names whose retrieves include staged runs unless they say
    otherwise; ``auto_approve``: seconds after its first write an unheld staged run is approved (0: never);
    ``expire``: seconds after which an unheld staged run nobody approved is discarded as expired (0: never).
    """

    actors: tuple[str, ...] = ()
    tokens: tuple[str, ...] = ()
    read_tokens: tuple[str, ...] = ()
    auto_approve: float = 0.0
    expire: float = 0.0

    def __post_init__(self) -> None:
        for name in ("actors", "tokens", "read_tokens"):
            object.__setattr__(self, name, _patterns(getattr(self, name)))
        for name in ("auto_approve", "expire"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < float("inf"):
                raise ValueError(f"staging policy {name} must be a non-negative number of seconds, got {value!r}")

    @classmethod
    def parse(cls, actors: str = "", tokens: str = "", read_tokens: str = "", auto_approve: float = 0.0,
              expire: float = 0.0) -> StagingPolicy:
        """The policy of comma-separated pattern lists (as the ``WIKIMEM_STAGED_*`` variables hold them)."""
        return cls(_patterns(actors), _patterns(tokens), _patterns(read_tokens), auto_approve, expire)

    def stages(self, actor: str | None) -> bool:
        """Whether a write by ``actor`` is staged."""
        return _matches(actor, self.actors)

    def stages_token(self, name: str | None) -> bool:
        """Whether the writes of the token named ``name`` are staged."""
        return _matches(name, self.tokens)

    def reads_staged(self, name: str | None) -> bool:
        """Whether the token named ``name`` retrieves with its owners' staged runs by default."""
        return _matches(name, self.read_tokens)

    def to_dict(self) -> dict[str, Any]:
        return {"actors": list(self.actors), "tokens": list(self.tokens), "read_tokens": list(self.read_tokens),
                "auto_approve_seconds": self.auto_approve, "expire_seconds": self.expire}
