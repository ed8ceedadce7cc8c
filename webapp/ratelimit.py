"""Rate limits: sign-in attempts per client address and per account name, and API requests per token.

Design notes: docs/explanation/access.md (``webapp/ratelimit.py``).
"""

from __future__ import annotations

import logging
import math
import sqlite3
import threading
import time
from dataclasses import dataclass
from typing import Any

from limits import RateLimitItem, parse_many
from limits.storage import Storage, storage_from_string
from limits.strategies import FixedWindowRateLimiter

from wikimem.errors import QuotaExceeded
from wikimem.host.access import AuthState, Principal

from .config import ConfigError

__all__ = ["AuthStateStorage", "LoginLimiter", "make_login_limiter", "ApiLimiter", "make_api_limiter", "RateLimited"]

log = logging.getLogger(__name__)


class RateLimited(QuotaExceeded):
    """429: this token sent more requests than its limit allows; ``retry_after`` seconds until it may again."""

    code = "rate_limited"


class AuthStateStorage(Storage):
    """A ``limits`` storage over the host's shared :class:`AuthState` file (fixed windows only)."""

    STORAGE_SCHEME = None  # made by :func:`make_login_limiter`, not from a URI

    def __init__(self, state: AuthState):
        super().__init__()
        self.state = state

    @property
    def base_exceptions(self):
        return sqlite3.Error

    def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        return self.state.incr(key, expiry, amount)

    def get(self, key: str) -> int:
        return self.state.count(key)

    def get_expiry(self, key: str) -> float:
        return self.state.expiry(key)

    def check(self) -> bool:
        return self.state.check()

    def reset(self) -> int | None:
        return self.state.clear_all()

    def clear(self, key: str) -> None:
        self.state.clear(key)


@dataclass
class LoginLimiter:
    """Counts sign-in attempts and says when one must wait."""

    storage: Storage
    per_address: list[RateLimitItem]
    per_account: list[RateLimitItem]

    def __post_init__(self):
        self._strategy = FixedWindowRateLimiter(self.storage)

    def attempt(self, address: str, account: str | None) -> int | None:
        """Count one attempt; None if it may go on, else the seconds until it may be tried again.

        The account's counters are only touched when the address is within
        its limits, so one noisy address cannot also drain an account's.
        """
        wait = self._hit(self.per_address, "address", address or "?")
        if wait is None and account:
            wait = self._hit(self.per_account, "account", account.casefold()[:200])
        return wait

    def _hit(self, items: list[RateLimitItem], kind: str, who: str) -> int | None:
        return _hit(self._strategy, items, "login", kind, who)


def _hit(strategy: FixedWindowRateLimiter, items: list[RateLimitItem], *identifiers: str) -> int | None:
    """Count one hit against every limit; None while all hold, else seconds until the first one that broke resets."""
    for item in items:
        if not strategy.hit(item, *identifiers):
            reset = strategy.get_window_stats(item, *identifiers).reset_time
            return max(1, math.ceil(reset - time.time()))
    return None


# A worker writes a token's API hits to the shared counter in batches: every BATCH hits or AGE seconds, and at once
# when the count it knows comes within BATCH of a limit (a small limit is counted hit by hit). The counter is shared
# by every worker, so a write per request made every API request queue for one file: 0.4-1.3 ms of a request's
# ~2 ms, the worst a tenth of a second. The price: another worker's hits are seen up to AGE late, so a token may
# pass its limit by at most BATCH - 1 hits per other worker; and a worker that exits drops fewer than BATCH.
BATCH = 16
AGE = 1.0
MAX_TALLIES = 10_000  # keys one process remembers (tokens × limits); past it, all start again from a write


@dataclass
class _Tally:
    """One key's hits in this process: the count the last write returned, and the hits let through since."""

    count: int
    written: float  # time.monotonic() of that write
    pending: int = 0


@dataclass
class ApiLimiter:
    """Counts a token's API requests (``WIKIMEM_API_LIMIT``); admin tokens pass uncounted; fails open."""

    storage: Storage
    per_token: list[RateLimitItem]
    metrics: Any = None  # the app's (wikimem/host/metrics.py): requests let through uncounted are counted there

    def __post_init__(self):
        self._strategy = FixedWindowRateLimiter(self.storage)
        self._tallies: dict[str, _Tally] = {}
        self._lock = threading.Lock()

    def check(self, principal: Principal) -> None:
        """Count one request of ``principal``'s token; :class:`RateLimited` when it is over its limit. A counter that
        cannot be written lets the request through (counted in ``wikimem_rate_limit_unavailable_total``)."""
        if not self.per_token or principal.has("admin"):
            return
        who = principal.token_id or principal.name
        failures: tuple[type[BaseException], ...] = (OSError, sqlite3.Error, *_errors(self.storage))
        try:
            with self._lock:
                wait = self._hit(who)
        except failures as exc:
            if self.metrics is not None:
                self.metrics.rate_limit_unavailable()
            log.warning("rate counter of token %s not written (%s): the request goes on uncounted", who, exc)
            return
        if wait is not None:
            limits = "; ".join(str(item) for item in self.per_token)
            raise RateLimited(f"this token sent more requests than its limit ({limits}); "
                              f"try again in {wait} s", retry_after=wait)

    def _hit(self, who: str) -> int | None:
        """One hit of token ``who`` against every limit (under the lock): None while all hold, else the seconds
        until the first one that broke resets."""
        now = time.monotonic()
        for item in self.per_token:
            key = item.key_for("api", who)
            tally = self._tallies.get(key)
            if (tally is not None and tally.pending + 1 < BATCH and now - tally.written < AGE
                    and tally.count + tally.pending + 1 + BATCH <= item.amount):
                tally.pending += 1  # (written with the batch)
                continue
            amount = 1 + (tally.pending if tally is not None else 0)
            self._tallies.pop(key, None)  # (a write that fails drops the batch: those hits go uncounted)
            count = self.storage.incr(key, item.get_expiry(), amount)
            if len(self._tallies) >= MAX_TALLIES:
                self._tallies.clear()
            self._tallies[key] = _Tally(count, now)
            if count > item.amount:
                reset = self._strategy.get_window_stats(item, "api", who).reset_time
                return max(1, math.ceil(reset - time.time()))
        return None


def _errors(storage: Storage) -> tuple[type[BaseException], ...]:
    """What a ``limits`` storage raises when it cannot count (its client library's errors)."""
    found: Any = storage.base_exceptions
    return tuple(found) if isinstance(found, tuple) else (found,)


def _limits(config, key: str) -> list[RateLimitItem]:
    raw = str(config.get(key) or "")
    try:
        items = parse_many(raw)
    except ValueError as exc:
        raise ConfigError(f"WIKIMEM_{key} must be like '10/minute;50/hour', got {raw!r} ({exc})") from None
    return items


def _storage(config, state: AuthState) -> Storage:
    """Where counters live: ``state`` unless ``WIKIMEM_LOGIN_LIMIT_STORAGE`` names a ``limits`` storage."""
    uri = config.get("LOGIN_LIMIT_STORAGE")
    if not uri:
        return AuthStateStorage(state)
    try:
        storage = storage_from_string(uri)
    except Exception as exc:  # unknown scheme, or its client library is missing
        raise ConfigError(f"WIKIMEM_LOGIN_LIMIT_STORAGE {uri!r} cannot be used: {exc}") from None
    if not isinstance(storage, Storage):  # (an async storage: the limiters are synchronous)
        raise ConfigError(f"WIKIMEM_LOGIN_LIMIT_STORAGE {uri!r} is an async storage; use its synchronous scheme")
    return storage


def make_login_limiter(config, state: AuthState) -> LoginLimiter:
    """The sign-in limiter of an app's configuration: counters in ``state`` unless a storage URI is set."""
    return LoginLimiter(_storage(config, state), _limits(config, "LOGIN_LIMIT_ADDRESS"),
                        _limits(config, "LOGIN_LIMIT_ACCOUNT"))


def make_api_limiter(config, state: AuthState, metrics: Any = None) -> ApiLimiter:
    """The per-token API limiter (``WIKIMEM_API_LIMIT``; empty: no limit), counting where sign-ins count."""
    items = _limits(config, "API_LIMIT") if str(config.get("API_LIMIT") or "").strip() else []
    return ApiLimiter(_storage(config, state), items, metrics)
