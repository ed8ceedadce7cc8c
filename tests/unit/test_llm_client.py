"""ChatClient against a real chat-completions server on 127.0.0.1."""

from __future__ import annotations

import socket

import pytest
from fakes import FakeOpenAI
from parallel import run_threads

from wikimem.llm.chat import ChatClient, ChatRetry, LLMError

MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "你好"}]


@pytest.fixture
def fake():
    with FakeOpenAI() as server:
        yield server


def test_chat_returns_the_reply_and_sends_the_protocol(fake):
    fake.replies.append("你好呀")
    client = ChatClient(fake.url, "fake-chat", api_key="sk-test", extra={"temperature": 0.2})
    assert client.chat(MESSAGES) == "你好呀"
    (req,) = fake.requests
    assert req.path == "/v1/chat/completions"
    assert req.body == {"temperature": 0.2, "model": "fake-chat", "messages": MESSAGES}
    assert req.headers["Authorization"] == "Bearer sk-test"
    assert req.headers["Content-Type"] == "application/json"


def test_no_authorization_header_without_a_key(fake):
    ChatClient(fake.url, "m").chat(MESSAGES)
    assert "Authorization" not in fake.requests[0].headers


@pytest.mark.parametrize("suffix", ["", "/"])
def test_base_url_without_v1_and_with_trailing_slash(fake, suffix):
    fake.replies.append("ok")
    assert ChatClient(fake.root_url + suffix, "m").chat(MESSAGES) == "ok"
    assert fake.requests[0].path == "/chat/completions"


def test_reply_function_sees_the_messages(fake):
    fake.reply_fn = lambda messages: messages[-1]["content"][::-1]
    assert ChatClient(fake.url, "m").chat([{"role": "user", "content": "abc"}]) == "cba"


def test_content_parts_are_joined(fake):
    parts = [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]
    fake.respond_with = lambda path, body: (200, {"choices": [{"message": {"role": "assistant", "content": parts}}]})
    assert ChatClient(fake.url, "m").chat(MESSAGES) == "ab"


def test_http_error_carries_status_and_the_server_s_message(fake):
    fake.fail_status = 500
    with pytest.raises(LLMError) as info:
        ChatClient(fake.url, "m").chat(MESSAGES)
    assert info.value.status == 500
    assert "HTTP 500" in str(info.value) and "injected failure 500" in str(info.value)
    assert fake.url in str(info.value)


def test_wrong_key_is_401(fake):
    fake.api_key = "right"
    with pytest.raises(LLMError, match="HTTP 401: invalid api key") as info:
        ChatClient(fake.url, "m", api_key="wrong").chat(MESSAGES)
    assert info.value.status == 401
    fake.replies.append("in")
    assert ChatClient(fake.url, "m", api_key="right").chat(MESSAGES) == "in"


def test_wrong_path_is_404(fake):
    with pytest.raises(LLMError, match="HTTP 404"):
        ChatClient(fake.root_url + "/v2", "m").chat(MESSAGES)


def test_a_transient_failure_is_one_error_then_it_works(fake):
    fake.fail_next, fake.fail_status = 1, None
    client = ChatClient(fake.url, "m", retry=ChatRetry(attempts=1))  # no retry (test_chat_retry.py: with)
    with pytest.raises(LLMError, match="HTTP 500"):
        client.chat(MESSAGES)
    fake.replies.append("back")
    assert client.chat(MESSAGES) == "back"


def test_body_that_is_not_json(fake):
    fake.garbage = True
    with pytest.raises(LLMError, match="not JSON"):
        ChatClient(fake.url, "m").chat(MESSAGES)


def test_timeout_is_a_clear_error(fake):
    fake.delay = 5.0
    with pytest.raises(LLMError, match="timed out after 0.3s"):
        ChatClient(fake.url, "m", timeout=0.3).chat(MESSAGES)


def test_unreachable_endpoint():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(LLMError, match="cannot reach chat endpoint"):
        ChatClient(f"http://127.0.0.1:{port}/v1", "m", timeout=2).chat(MESSAGES)


@pytest.mark.parametrize("payload,match", [
    ({"choices": []}, "without choices"),
    ({"object": "chat.completion"}, "without choices"),
    ({"choices": [{"index": 0}]}, "without choices"),
    ({"choices": [{"message": "text"}]}, "no text content"),
    ({"choices": [{"message": {"role": "assistant", "content": None}, "finish_reason": "tool_calls"}]},
     "finish_reason='tool_calls'"),
    ({"choices": [{"message": {"role": "assistant", "content": 5}}]}, "no text content"),
    ([1, 2], "without choices"),
])
def test_replies_not_in_the_chat_completions_shape(fake, payload, match):
    fake.respond_with = lambda path, body: (200, payload)
    with pytest.raises(LLMError, match=match):
        ChatClient(fake.url, "m").chat(MESSAGES)


def test_null_content_from_the_queue_is_an_error(fake):
    fake.replies.append(None)
    with pytest.raises(LLMError, match="no text content"):
        ChatClient(fake.url, "m").chat(MESSAGES)


@pytest.mark.parametrize("kwargs,match", [
    ({"base_url": "ftp://x", "model": "m"}, "http"),
    ({"base_url": "127.0.0.1:8000", "model": "m"}, "http"),
    ({"base_url": None, "model": "m"}, "http"),
    ({"base_url": "http://x", "model": ""}, "model"),
    ({"base_url": "http://x", "model": "m", "timeout": 0}, "timeout"),
    ({"base_url": "http://x", "model": "m", "timeout": -1}, "timeout"),
    ({"base_url": "http://x", "model": "m", "extra": {"stream": True}}, "stream"),
    ({"base_url": "http://x", "model": "m", "extra": {"model": "other"}}, "model"),
])
def test_constructor_rejects_bad_configuration(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ChatClient(**kwargs)


@pytest.mark.parametrize("messages", ["hello", [("user", "hi")], None])
def test_messages_must_be_a_list_of_dicts(fake, messages):
    with pytest.raises(ValueError):
        ChatClient(fake.url, "m").chat(messages)
    assert fake.requests == []


def test_repr_never_shows_the_key():
    assert "sk-secret" not in repr(ChatClient("http://x/v1", "m", api_key="sk-secret"))


def test_concurrent_calls_from_threads(fake):
    fake.reply_fn = lambda messages: messages[0]["content"]
    client = ChatClient(fake.url, "m")
    results: dict[int, str] = {}

    def call(i):
        results[i] = client.chat([{"role": "user", "content": f"n{i}"}])

    assert run_threads(call, [(i,) for i in range(8)]) == []
    assert results == {i: f"n{i}" for i in range(8)}
