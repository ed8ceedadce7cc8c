"""gunicorn with deploy/gunicorn.conf.py: threaded workers, and configurations it refuses in one line."""

from __future__ import annotations

import threading

import pytest
from fakes import FakeOpenAI
from gunicorn_env import Gunicorn, run_until_exit

from wikimem.client import Client

pytestmark = pytest.mark.slow


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def test_a_missing_secret_key_is_one_line_from_the_master(tmp_path):
    done = run_until_exit(tmp_path, WIKIMEM_SECRET_KEY=None, WIKIMEM_WORKERS="3")
    assert done.returncode == 1
    ours = [line for line in _lines(done.stderr) if line.startswith("wikimem:")]
    assert len(ours) == 1 and "WIKIMEM_SECRET_KEY" in ours[0]
    assert "Traceback" not in done.stderr + done.stdout
    assert "Booting worker" not in done.stderr + done.stdout  # refused before any worker started


@pytest.mark.parametrize("workers", ["1", "2"])
def test_without_the_config_file_each_worker_says_it_in_one_line_and_gunicorn_stops(tmp_path, workers):
    done = run_until_exit(tmp_path, args=["-w", workers, "-b", "127.0.0.1:0", "webapp.wsgi:app"],
                          WIKIMEM_SECRET_KEY=None)
    assert done.returncode != 0
    out = done.stderr + done.stdout
    assert 1 <= sum(line.startswith("wikimem: WIKIMEM_SECRET_KEY") for line in _lines(out)) <= int(workers)
    assert "App failed to load" in out  # halted, not respawning workers forever
    # No traceback of ours. (When several workers fail at once, gunicorn 27's master may print its own
    # HaltServer traceback while reaping the second one: the reason the config file checks first.)
    assert "webapp/" not in out and "wikimem/" not in out
    if workers == "1":
        assert "Traceback" not in out


@pytest.mark.parametrize("env, words", [
    ({"WIKIMEM_LLM_TIMEOUT": "60"}, "must be below the worker timeout"),
    ({"WIKIMEM_LLM_TIMEOUT": "20", "WIKIMEM_TIMEOUT": "15"}, "must be below the worker timeout"),
    ({"WIKIMEM_LLM_TIMEOUT": "soon"}, "WIKIMEM_LLM_TIMEOUT must be a number"),
    ({"WIKIMEM_LLM_URL": "http://127.0.0.1:9/v1"}, "set both WIKIMEM_LLM_URL and WIKIMEM_LLM_MODEL"),
])
def test_other_bad_settings_are_one_line_too(tmp_path, env, words):
    done = run_until_exit(tmp_path, **env)
    assert done.returncode == 1
    ours = [line for line in _lines(done.stderr) if line.startswith("wikimem:")]
    assert len(ours) == 1 and words in ours[0], done.stderr
    assert "Traceback" not in done.stderr


def test_a_slow_model_holds_one_thread_not_the_worker(tmp_path):
    """One worker process: while memorize waits on the model, a retrieve for another owner is served."""
    gate = threading.Event()

    def slow_reply(messages):
        gate.wait(60)  # the model "thinks" until the test lets it answer
        return '[{"content": "她开始学冲浪了。"}]'

    with FakeOpenAI() as llm:
        llm.reply_fn = slow_reply
        with Gunicorn(tmp_path, WIKIMEM_WORKERS="1", WIKIMEM_LLM_URL=llm.url, WIKIMEM_LLM_MODEL="fake-chat",
                      WIKIMEM_LLM_TIMEOUT="50") as host:
            assert "Using worker: webapp.gworker.BalancedThreadWorker" in host.output()  # (threaded)
            writer = Client(host.base, host.token, owner="user:writer", timeout=55, retries=0, proxies={})
            # A generous timeout: what matters is that the answer comes while the model still thinks
            # (the gate is shut until then), however slow a busy machine makes it.
            reader = Client(host.base, host.token, owner="user:reader", timeout=45, retries=0, proxies={})
            writer.create_owner()
            reader.create_owner()
            reader.add("preferences", "likes-the-sea", "喜欢海边。")
            reader.retrieve("海边")  # the first retrieve pays for loading the index and the tokenizer
            outcome = {}
            memorizing = threading.Thread(
                target=lambda: outcome.setdefault("result", writer.memorize("user: 我开始学冲浪了")))
            memorizing.start()
            try:
                for _ in range(200):  # until the model has the request
                    if llm.chat_calls:
                        break
                    threading.Event().wait(0.05)
                assert llm.chat_calls == 1
                found = reader.retrieve("海边")  # served by the same (only) worker meanwhile
                assert [i.item.name for i in found.items] == ["likes-the-sea"]
                assert memorizing.is_alive() and not gate.is_set()
            finally:
                gate.set()
                memorizing.join(60)
            entries, run, commit = outcome["result"]
            assert [e.content for e in entries] == ["她开始学冲浪了。"] and commit

