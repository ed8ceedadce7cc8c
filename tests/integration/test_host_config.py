"""The composition root (``wikimem.host.config``): one typed configuration, one way to build a host."""

from __future__ import annotations

import dataclasses
import re

import pytest

from wikimem.host.config import KEYS, Config, ConfigError, build_host, load_config, read_setting


def test_defaults_then_the_environment_then_overrides():
    env = {"WIKIMEM_INDEX_CACHE": "8", "WIKIMEM_TOKENIZER": "jieba", "WIKIMEM_DATA": "/srv/env"}
    assert load_config(environ={}).index_cache == 64
    assert load_config(environ=env).index_cache == 8
    config = load_config({"INDEX_CACHE": 3, "DATA_ROOT": "/srv/given"}, environ=env)
    assert (config.index_cache, config.tokenizer, config.data_root) == (3, "jieba", "/srv/given")


def test_an_empty_variable_is_unset():
    assert load_config(environ={"WIKIMEM_INDEX_CACHE": "", "WIKIMEM_BIND": ""}) == load_config(environ={})


def test_the_configuration_is_frozen_and_a_variant_is_checked_again():
    config = load_config(environ={})
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.index_cache = 2  # type: ignore[misc]
    assert dataclasses.replace(config, index_cache=2).index_cache == 2
    with pytest.raises(ConfigError, match="INDEX_CACHE must be a positive integer"):
        dataclasses.replace(config, index_cache=0)


def test_secrets_stay_out_of_its_repr():
    config = load_config({"SECRET_KEY": "s3cret-s3cret-s3cret", "ADMIN_TOKEN": "tok-tok-tok",
                   "LLM_URL": "http://127.0.0.1:9/v1", "LLM_MODEL": "m", "LLM_API_KEY": "sk-live-key"}, environ={})
    shown = repr(config)
    assert "s3cret" not in shown and "tok-tok" not in shown and "sk-live" not in shown
    assert "llm_url='http://127.0.0.1:9/v1'" in shown


@pytest.mark.parametrize("overrides, message", [
    ({"NOT_A_SETTING": 1}, "unknown configuration key 'NOT_A_SETTING'"),
    ({"ENV": "staging"}, "WIKIMEM_ENV must be production or development"),
    ({"PROXIES": -1}, "PROXIES must be a non-negative integer"),
    ({"EMBED_URL": "http://127.0.0.1:9/v1"}, "set both WIKIMEM_EMBED_URL and WIKIMEM_EMBED_MODEL"),
    ({"DIARY_RECALL": "some"}, "WIKIMEM_DIARY_RECALL must be window or all"),
    ({"REPLICATION": "async"}, "WIKIMEM_REPLICATION needs WIKIMEM_REMOTE"),
    ({"REMOTE": "file:///srv/no-placeholder.git"}, "must contain {owner}"),
    ({"PEERS": "ftp://x"}, "a peer must be an http"),
])
def test_bad_values_are_refused_with_the_variable_named(overrides, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config(overrides, environ={})


def test_a_config_error_is_a_value_error_for_the_cli():
    assert issubclass(ConfigError, ValueError) and issubclass(ConfigError, RuntimeError)


def test_every_field_of_the_configuration_is_a_key():
    """(Every variable is documented from its entry in wikimem/host/variables.py: test_config_docs.py.)"""
    fields = {f.name for f in dataclasses.fields(Config) if f.init}
    assert {k.lower() if k != "SELF" else "self_url" for k in KEYS} == fields


def test_one_setting_alone_is_typed_and_defaulted():
    assert read_setting("DATA_ROOT", environ={}) == "data"
    assert read_setting("STORE", environ={"WIKIMEM_STORE": "/mem"}) == "/mem"
    assert read_setting("INDEX_CACHE", environ={"WIKIMEM_INDEX_CACHE": "9"}) == 9
    with pytest.raises(ConfigError, match="WIKIMEM_INDEX_CACHE must be an integer"):
        read_setting("INDEX_CACHE", environ={"WIKIMEM_INDEX_CACHE": "many"})
    assert read_setting("TOKENS_FILE", environ={"WIKIMEM_TOKENIZER": "nonsense"}) is None  # the others are not read


def test_the_host_gets_every_part_of_its_configuration(tmp_path):
    remote = f"file://{tmp_path}/remotes/{{owner}}.git"
    config = load_config({"DATA_ROOT": str(tmp_path / "data"), "INDEX_CACHE": 5, "TOKENIZER": "jieba",
                   "QUOTA_OWNERS": 7, "QUOTA_OWNERS_PER_MINUTE": 0, "LLM_URL": "http://127.0.0.1:9/v1",
                   "LLM_MODEL": "chat", "LLM_TIMEOUT": 12.5, "EMBED_URL": "http://127.0.0.1:9/v1",
                   "EMBED_MODEL": "e5", "REMOTE": remote, "REMOTE_TIMEOUT": 3.0,
                   "PEERS": "http://10.0.0.1:8000,http://10.0.0.2:8000", "SELF": "http://10.0.0.2:8000"},
                  environ={})
    host = build_host(config)
    assert host.root == tmp_path / "data" and host.index_cache == 5
    assert host.recall.use_jieba is True and host.recall.query_stopwords is True
    assert (host.quota.max_owners, host.quota.per_minute) == (7, 0)
    assert host.llm.timeout == 12.5 and host.embedder is not None
    assert host.replication.settings.remote == remote and host.replication.settings.timeout == 3.0
    assert host.replication.mode == "sync"
    assert host.peers.self_url == "http://10.0.0.2:8000" and len(host.peers.urls) == 2


def test_a_plain_host_has_no_remote_no_model_no_peers(tmp_path):
    host = build_host(load_config({"DATA_ROOT": str(tmp_path)}, environ={}))
    assert (host.replication, host.llm, host.embedder, host.peers) == (None, None, None, None)


def test_the_flask_config_is_derived_from_the_same_object(tmp_path):
    pytest.importorskip("flask")
    from webapp.config import FLASK_KEYS, flask_config, host_config

    flask = flask_config({"TESTING": True, "DATA_ROOT": str(tmp_path), "TOKENIZER": "jieba", "PROXIES": 2},
                        environ={"WIKIMEM_MAX_BODY": "2048"})
    host = host_config(flask)
    assert host.tokenizer == "jieba" and "TOKENIZER" not in flask  # a host setting stays with the host
    assert (flask["DATA_ROOT"], flask["PROXIES"], flask["MAX_CONTENT_LENGTH"]) == (str(tmp_path), 2, 2048)
    assert set(FLASK_KEYS) <= set(flask) and flask["TESTING"] is True
    assert flask["SECRET_KEY"] and host.secret_key is None  # a test's key is made up for the app only


def test_the_shared_database_and_the_job_limits_are_read_here(tmp_path):
    with pytest.raises(ConfigError, match="postgresql://"):
        load_config({"DATABASE_URL": "sqlite:///x.db"}, environ={})
    env = {"WIKIMEM_JOBS_PER_PREFIX": "7", "WIKIMEM_JOBS_PER_OWNER": "0", "WIKIMEM_JOBS_MAX_MB": "1",
           "WIKIMEM_JOBS_TURN_KEEP": "30", "WIKIMEM_DATA": str(tmp_path)}
    limits = load_config(environ=env).job_limits()
    assert (limits.per_tenant, limits.per_owner, limits.max_bytes, limits.turn_keep) == (7, 0, 1024 * 1024, 30.0)
    with pytest.raises(ConfigError, match="JOBS_TURN_KEEP"):
        load_config({"JOBS_TURN_KEEP": -1}, environ={})
    peers = {"WIKIMEM_PEERS": "http://127.0.0.1:8001,http://127.0.0.1:8002", "WIKIMEM_BIND": "127.0.0.1:8002"}
    host = build_host(load_config(environ={**env, **peers}))
    assert host.name == "http://127.0.0.1:8002" and host.jobs.limits.per_tenant == 7
