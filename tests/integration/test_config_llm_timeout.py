"""WIKIMEM_LLM_TIMEOUT: read from the environment, validated, handed to the chat client."""

from __future__ import annotations

import pytest

pytest.importorskip("flask")

from webapp import create_app  # noqa: E402
from webapp.hosting import get_host
from wikimem.host import ConfigError, load_config  # noqa: E402

BASE = {"WIKIMEM_ENV": "development", "WIKIMEM_LLM_URL": "http://127.0.0.1:9/v1", "WIKIMEM_LLM_MODEL": "m"}


def test_the_default_is_below_the_worker_timeout():
    assert load_config(environ={"WIKIMEM_ENV": "development"}).llm_timeout < 60


def test_the_environment_sets_the_chat_clients_timeout(tmp_path, monkeypatch):
    for key, value in dict(BASE, WIKIMEM_LLM_TIMEOUT="12.5", WIKIMEM_DATA=str(tmp_path)).items():
        monkeypatch.setenv(key, value)
    app = create_app()
    with app.app_context():
        assert get_host().llm.timeout == 12.5


@pytest.mark.parametrize("value", ["soon", "0", "-3", "nan", "inf"])
def test_a_bad_value_is_refused(value):
    with pytest.raises(ConfigError) as info:
        load_config(environ=dict(BASE, WIKIMEM_LLM_TIMEOUT=value))
    assert "WIKIMEM_LLM_TIMEOUT" in str(info.value)
