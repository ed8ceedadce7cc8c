"""A chat model briefly down, busy or failing is tried again, within bounds (issue 35): ChatRetry, MemorizeRetry,
Retry-After."""

from __future__ import annotations

import socket
import time
from email.utils import formatdate

import pytest
from fakes import FakeOpenAI

from wikimem.endpoint import retry_after
from wikimem.host.fleet import MemorizeRetry
from wikimem.llm import ChatClient, ChatRetry, LLMError

MESSAGES = [{"role": "user", "content": "hi"}]
QUICK = ChatRetry(attempts=3, backoff=0.05, max_wait=2.0, budget=3.0)


@pytest.fixture
def fake():
    with FakeOpenAI() as server:
        yield server


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
def test_a_busy_or_failing_model_is_tried_again(fake, status):
    fake.fail_next_status, fake.fail_next = status, 2
    fake.replies.append("back")
    assert ChatClient(fake.url, "m", retry=QUICK).chat(MESSAGES) == "back"
    assert len(fake.requests) == 3


def test_the_attempts_are_bounded_and_the_last_error_says_why(fake):
    fake.fail_status = 503
    with pytest.raises(LLMError, match="HTTP 503") as info:
        ChatClient(fake.url, "m", retry=QUICK).chat(MESSAGES)
    assert len(fake.requests) == 3 and info.value.transient and info.value.status == 503


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_a_refusal_is_not_tried_again(fake, status):
    fake.fail_status = status
    with pytest.raises(LLMError, match=f"HTTP {status}") as info:
        ChatClient(fake.url, "m", retry=QUICK).chat(MESSAGES)
    assert len(fake.requests) == 1 and not info.value.transient


def test_retry_after_is_honoured(fake):
    fake.fail_next_status, fake.fail_next, fake.retry_after = 429, 1, "1"
    fake.replies.append("after a second")
    started = time.monotonic()
    assert ChatClient(fake.url, "m", retry=QUICK).chat(MESSAGES) == "after a second"
    assert time.monotonic() - started >= 1.0  # not the 0.05 s backoff


def test_a_retry_after_beyond_the_bounds_is_left_to_the_caller(fake):
    fake.fail_status, fake.retry_after = 429, "120"
    with pytest.raises(LLMError) as info:
        ChatClient(fake.url, "m", retry=QUICK).chat(MESSAGES)
    assert len(fake.requests) == 1 and info.value.retry_after == 120.0  # for the job to wait that long


def test_a_model_that_is_down_is_tried_again_and_a_timeout_is_not(fake):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(LLMError, match="cannot reach") as info:
        ChatClient(f"http://127.0.0.1:{port}/v1", "m", retry=QUICK).chat(MESSAGES)
    assert info.value.transient and time.monotonic() - started >= 0.15  # 0.05 + 0.1 of waits
    fake.delay = 2.0
    with pytest.raises(LLMError, match="timed out") as info:
        ChatClient(fake.url, "m", timeout=0.3, retry=QUICK).chat(MESSAGES)
    assert info.value.timed_out and len(fake.requests) == 1  # a timeout already took its time


def test_the_default_retry():
    assert ChatClient("http://127.0.0.1:9/v1", "m").retry == ChatRetry(attempts=3, backoff=0.5, max_wait=8.0,
                                                                        budget=12.0)


def test_retry_after_reads_seconds_and_dates():
    assert retry_after({"Retry-After": "7"}) == 7.0
    assert 25 <= retry_after({"Retry-After": formatdate(time.time() + 30, usegmt=True)}) <= 30
    assert retry_after({"Retry-After": formatdate(time.time() - 30, usegmt=True)}) == 0.0
    assert retry_after({"Retry-After": "soon"}) is None and retry_after({}) is None and retry_after(None) is None


def _error(transient=True, after=None):
    exc = LLMError("down")
    exc.transient, exc.retry_after = transient, after
    return exc


def test_a_memorize_job_runs_again_later_within_bounds():
    policy = MemorizeRetry()
    assert [policy.delay(_error(), n) for n in (1, 2, 3, 4)] == [2.0, 8.0, 30.0, None]
    assert policy.delay(_error(after=20.0), 1) == 20.0  # the model's Retry-After, when longer
    assert policy.delay(_error(after=301.0), 1) is None  # beyond max_retry_after: fail now, with the cause
    assert policy.delay(_error(transient=False), 1) is None  # a refusal is not an outage
