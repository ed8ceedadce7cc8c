"""The API's JSON answers through orjson are the documents Flask's own provider writes (issue 39)."""

from __future__ import annotations

import dataclasses
import datetime
import json
import uuid

import pytest
from flask import Flask
from flask.json.provider import DefaultJSONProvider

from webapp.jsonout import JsonProvider


@dataclasses.dataclass
class Hit:
    file: str
    score: float


VALUES = [
    {"items": [{"file": "偏好", "name": "茶", "content": "她喜欢乌龙茶 🍵", "score": 0.123456789}], "z": 1, "a": None},
    {"when": datetime.datetime(2026, 12, 6, 8, 0, tzinfo=datetime.timezone.utc), "day": datetime.date(2026, 1, 2)},
    {"hit": Hit("f", 1.5), "id": uuid.UUID(int=7), "list": [1, 2.5, True, "x\n\"y\""]},
    {"big": 2**70, "tiny": 1e-05, "nested": {"b": [], "a": {}}},
    [1, "two", None],
]


@pytest.fixture
def apps():
    fast, plain = Flask("fast"), Flask("plain")
    fast.json = JsonProvider(fast)
    provider = DefaultJSONProvider(plain)
    provider.sort_keys, provider.ensure_ascii = False, False
    plain.json = provider
    return fast, plain


@pytest.mark.parametrize("value", VALUES)
def test_the_same_document_as_flask_writes(apps, value):
    fast, plain = apps
    with fast.app_context():
        got = fast.json.response(value)
    with plain.app_context():
        want = plain.json.response(value)
    assert got.mimetype == want.mimetype == "application/json"
    assert json.loads(got.get_data()) == json.loads(want.get_data())  # same values, key order included:
    assert list(json.loads(got.get_data(), object_pairs_hook=list)) == list(
        json.loads(want.get_data(), object_pairs_hook=list))
    assert got.get_data().endswith(b"\n")


def test_memory_text_is_written_as_text(apps):
    fast, _ = apps
    with fast.app_context():
        assert fast.json.response(VALUES[0]).get_data().startswith('{"items":[{"file":"偏好"'.encode())


def test_debug_answers_stay_pretty(apps):
    fast, _ = apps
    fast.debug = True
    with fast.app_context():
        assert b'\n  "a": 1' in fast.json.response({"a": 1}).get_data()
