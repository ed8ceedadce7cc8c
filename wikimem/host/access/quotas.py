"""Quotas on creating owners: how many one token's owner prefix may hold, and how fast it may make them.

A write token limited to ``user:acme:`` could otherwise create owners
without end (each a git repository with its history index). Two limits,
both per owner-id prefix, both off with 0:

- ``max_owners``: owners whose id starts with the prefix (a count: waiting
  does not help, the answer is 403 ``quota_exceeded``);
- ``per_minute``: owners created under the prefix in a minute (a rate:
  429 with ``Retry-After``).

The rate is counted in the host's shared :class:`~wikimem.host.access.authstate.AuthState`
file, so all workers of a host count together. Both checks come before the
repository is made; two creations racing at the very limit may both pass
(the limit can be exceeded by the number of concurrent creators, never more).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from wikimem.errors import QuotaExceeded

__all__ = ["OwnerQuota"]

WINDOW = 60  # seconds


@dataclass(frozen=True)
class OwnerQuota:
    """The owner-creation limits of a host (0 = none)."""

    max_owners: int = 0
    per_minute: int = 0

    def check(self, prefix: str, count_owners: Callable[[str], int], state) -> None:
        """Before creating an owner under ``prefix``: refuse it (:class:`QuotaExceeded`) or count it."""
        if self.max_owners and count_owners(prefix) >= self.max_owners:
            raise QuotaExceeded(f"the owner prefix {prefix!r} already holds {self.max_owners} owners, its quota; "
                                "delete owners or ask for a larger quota (WIKIMEM_QUOTA_OWNERS)")
        if self.per_minute:
            window = int(time.time() // WINDOW)
            made = state.incr(f"owners-created:{prefix}:{window}", (window + 1) * WINDOW)
            if made > self.per_minute:
                retry = max(1, (window + 1) * WINDOW - int(time.time()))
                raise QuotaExceeded(f"at most {self.per_minute} owners a minute may be created under {prefix!r}; "
                                    f"try again in {retry} s", retry_after=retry)
