"""A token's API hits reach the shared counter in batches (webapp/ratelimit.py: BATCH, AGE), exactly near a limit.

Two limiters over one state file stand for two gunicorn workers of one host.
"""

from __future__ import annotations

import threading
import time

import pytest
from limits import parse_many

from webapp.ratelimit import AGE, BATCH, ApiLimiter, AuthStateStorage, RateLimited
from wikimem.host.access import Principal
from wikimem.host.access.authstate import AuthState

BOT = Principal("bot", frozenset({"read"}), token_id="t1")


def _limiter(tmp_path, limit: str) -> ApiLimiter:
    return ApiLimiter(AuthStateStorage(AuthState(tmp_path)), parse_many(limit))


def _shared_count(tmp_path, limit: str) -> int:
    [item] = parse_many(limit)
    return AuthState(tmp_path).count(item.key_for("api", BOT.token_id))


def _passes(limiter: ApiLimiter) -> bool:
    try:
        limiter.check(BOT)
        return True
    except RateLimited:
        return False


def test_far_from_the_limit_hits_are_written_a_batch_at_a_time(tmp_path):
    limiter = _limiter(tmp_path, "100000/minute")
    for _ in range(BATCH * 2 + 8):
        limiter.check(BOT)
    # the first hit is written alone, then every BATCH: 1, 1 + BATCH, 1 + 2 BATCH; the last 7 wait for the next
    assert _shared_count(tmp_path, "100000/minute") == 1 + 2 * BATCH


def test_a_batch_waits_at_most_its_age(tmp_path):
    limiter = _limiter(tmp_path, "100000/minute")
    for _ in range(3):
        limiter.check(BOT)
    assert _shared_count(tmp_path, "100000/minute") == 1
    time.sleep(AGE + 0.1)
    limiter.check(BOT)  # written with the two before it
    assert _shared_count(tmp_path, "100000/minute") == 4


@pytest.mark.parametrize("amount", [3, BATCH + 4, 3 * BATCH])
def test_one_worker_lets_exactly_the_limit_through(tmp_path, amount):
    limiter = _limiter(tmp_path, f"{amount}/minute")
    passed = [_passes(limiter) for _ in range(amount + 5)]
    assert passed == [True] * amount + [False] * 5
    assert _shared_count(tmp_path, f"{amount}/minute") == amount + 5  # refused hits count, as before


def test_workers_together_pass_the_limit_by_less_than_a_batch_each(tmp_path):
    amount = 4 * BATCH
    workers = [_limiter(tmp_path, f"{amount}/minute") for _ in range(2)]
    passed = sum(_passes(workers[i % 2]) for i in range(3 * amount))
    assert amount <= passed <= amount + BATCH - 1


def test_threads_of_one_worker_count_every_hit(tmp_path):
    limiter = _limiter(tmp_path, "100000/minute")
    threads = [threading.Thread(target=lambda: [limiter.check(BOT) for _ in range(BATCH * 5)]) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    time.sleep(AGE + 0.1)
    limiter.check(BOT)  # the batch left over, written with this one
    assert _shared_count(tmp_path, "100000/minute") == 4 * BATCH * 5 + 1


def test_admin_tokens_are_not_counted(tmp_path):
    limiter = _limiter(tmp_path, "2/minute")
    admin = Principal("ops", frozenset({"admin"}), token_id="t2")
    for _ in range(10):
        limiter.check(admin)
    assert AuthState(tmp_path).count(parse_many("2/minute")[0].key_for("api", "t2")) == 0
