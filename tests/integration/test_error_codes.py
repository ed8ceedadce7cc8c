"""One rule for error statuses, across routes (issue 24 items 14, 21, 22).

400 ``bad_request``: the request is malformed — not JSON, not an object, a
field unknown, missing or of the wrong JSON type, a header or cursor not of
its syntax. 422: well-formed but refused — a name, date, time, time zone,
range, choice or length outside its rules (``invalid_name`` for names,
dates and times, ``invalid_value`` for the rest). Nothing is written either
way. The probes and the API answer a wrong method with a JSON 405 and
``Allow``.
"""

from __future__ import annotations

import base64
import json

import pytest
from apiworld import ADMIN, OWNER, auth

O = f"/api/v1/owners/{OWNER}"
ITEM = O + "/items/notes/tea"


def _cursor(*key) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(key)).encode()).decode().rstrip("=")


# (method, path, request keywords, status, code)
CASES = [
    # -- 400: malformed ------------------------------------------------------------------
    ("PUT", ITEM, {"data": "{not json", "content_type": "application/json"}, 400, "bad_request"),
    ("PUT", ITEM, {"json": ["content"]}, 400, "bad_request"),
    ("PUT", ITEM, {"json": {}}, 400, "bad_request"),  # content missing
    ("PUT", ITEM, {"json": {"content": "x", "colour": "red"}}, 400, "bad_request"),
    ("PUT", ITEM, {"json": {"content": 7}}, 400, "bad_request"),
    ("PUT", ITEM, {"json": {"content": "x"}, "headers": {"If-Match": '"a" "b"'}}, 400, "bad_request"),
    ("POST", O + "/diary", {"json": {"content": "x", "date": 20260721}}, 400, "bad_request"),
    ("POST", O + "/diary", {"json": {"content": "x"}, "headers": {"Idempotency-Key": "has space"}},
     400, "bad_request"),
    ("GET", O + "/diary?start=2026-07-01", {}, 400, "bad_request"),  # end missing
    ("POST", O + "/retrieve", {"json": {"query": "tea", "limit": "ten"}}, 400, "bad_request"),
    ("POST", O + "/retrieve", {"json": {"query": "tea", "time_range": ["2026-07-01"]}}, 400, "bad_request"),
    ("POST", O + "/retrieve", {"json": {"q": "tea"}}, 400, "bad_request"),
    ("POST", O + "/batch", {"json": {"ops": {"op": "add"}}}, 400, "bad_request"),
    ("POST", O + "/diary-tool", {"json": {"arguments": '{"text": "x"}'}}, 400, "bad_tool_call"),
    ("PUT", O + "/settings", {"json": {"tz": 8}}, 400, "bad_request"),
    ("PUT", O + "/settings", {"json": {"character": 7}}, 400, "bad_request"),
    ("GET", O + "/history?limit=many", {}, 400, "bad_request"),
    ("GET", O + f"/history?cursor={2**63}", {}, 400, "bad_request"),  # was 500 (item 22)
    ("GET", "/api/v1/runs?cursor=" + _cursor(2**63, "user:a", 1), {}, 400, "bad_request"),  # was 500 (item 22)
    ("GET", "/api/v1/runs?cursor=!!", {}, 400, "bad_request"),
    ("GET", "/api/v1/owners?cursor=..", {}, 400, "bad_request"),
    ("POST", "/api/v1/bulk/rollback", {"json": {"actor": "x", "preview": True, "cursor": "-1"}}, 400, "bad_request"),
    ("POST", O + "/revert", {"json": {}}, 400, "bad_request"),
    # -- 422: well-formed, refused --------------------------------------------------------
    ("PUT", O + "/items/Notes/tea", {"json": {"content": "x"}}, 422, "invalid_name"),
    ("PUT", O + "/items/notes/a%3Ab", {"json": {"content": "x"}}, 422, "invalid_name"),
    ("PUT", ITEM, {"json": {"content": "   "}}, 422, "invalid_value"),
    ("PUT", ITEM, {"json": {"content": "x", "actor": "a\u202eb"}}, 422, "invalid_name"),
    ("PUT", ITEM, {"json": {"content": "x", "run": "r" * 201}}, 422, "invalid_value"),
    ("PUT", "/api/v1/owners/..x", {}, 422, "invalid_name"),
    ("POST", O + "/diary", {"json": {"content": "x", "date": "2026-13-45"}}, 422, "invalid_name"),  # was 400
    ("POST", O + "/diary", {"json": {"content": "x", "time": "25:00"}}, 422, "invalid_name"),
    ("POST", O + "/diary", {"json": {"content": "x", "tz": "Mars/Olympus"}}, 422, "invalid_value"),
    ("GET", O + "/diary/2026-02-30", {}, 422, "invalid_name"),
    ("GET", O + "/diary?start=2026-07-01&end=July", {}, 422, "invalid_name"),
    ("POST", O + "/diary-tool", {"json": {"arguments": {"content": "x"}, "date": "2026-02-30"}},
     422, "invalid_name"),
    ("POST", O + "/retrieve", {"json": {"query": "tea", "limit": 0}}, 422, "invalid_value"),
    ("POST", O + "/retrieve", {"json": {"query": "tea", "limit": 201}}, 422, "invalid_value"),
    ("POST", O + "/retrieve", {"json": {"query": "tea", "limit": 10**9, "explain": True}},
     422, "invalid_value"),  # was 200 with every hit explained (item 22)
    ("POST", O + "/retrieve", {"json": {"query": "tea", "diary": "some"}}, 422, "invalid_value"),
    ("POST", O + "/retrieve", {"json": {"query": "tea", "tz": "Mars/Olympus"}}, 422, "invalid_value"),
    ("POST", O + "/retrieve", {"json": {"query": "tea", "as_of": "<none>"}}, 422, "invalid_value"),
    ("POST", O + "/batch", {"json": {"ops": [{"op": "add", "file": "Bad", "name": "x", "content": "y"}]}},
     422, "invalid_name"),
    ("PUT", O + "/settings", {"json": {"tz": "Mars/Olympus"}}, 422, "invalid_value"),
    ("PUT", O + "/settings", {"json": {"character": "x" * 201}}, 422, "invalid_value"),
    ("GET", O + "/history?limit=0", {}, 422, "invalid_value"),
    ("GET", O + "/history?since=last+tuesday", {}, 422, "invalid_value"),
    ("GET", "/api/v1/runs?limit=0", {}, 422, "invalid_value"),
    ("GET", "/api/v1/runs?until=9999-12-31T23:59:59-01:00", {}, 422, "invalid_value"),
    ("GET", "/api/v1/owners?limit=1001", {}, 422, "invalid_value"),
    ("GET", O + "/export?format=rar", {}, 422, "invalid_value"),
    ("POST", O + "/revert", {"json": {"commit": "../../etc"}}, 422, "invalid_value"),
    ("POST", O + "/rollback", {"json": {"run": " "}}, 422, "invalid_value"),
    ("GET", "/api/v1/jobs/not-a-job", {}, 422, "invalid_name"),
]


@pytest.mark.parametrize("method, path, kwargs, status, code", CASES,
                         ids=[f"{c[3]}-{c[0]}-{c[1][len(O):] or c[1]}-{i}" for i, c in enumerate(CASES)])
def test_malformed_is_400_and_refused_is_422(world, method, path, kwargs, status, code):
    owner = world.app.extensions["wikimem.host"].owner(OWNER)
    head = owner.head()
    kwargs = {**kwargs, "headers": auth(ADMIN, **kwargs.get("headers", {}))}
    r = world.client.open(path, method=method, **kwargs)
    assert r.status_code == status, r.get_data(as_text=True)
    err = r.get_json()["error"]
    assert err["code"] == code and err["message"]
    assert owner.head() == head  # nothing written


def test_a_peer_logout_notice_with_an_until_that_is_not_a_time_is_400(world):
    """Item 22: ``until: NaN`` in a signed notice reached SQLite's NOT NULL (500)."""
    from webapp.peering import REVOKED_PATH, _revocations

    for until in (float("nan"), float("inf")):
        with world.app.app_context():
            token = _revocations().dumps({"sid": "s" * 16, "until": until})
        r = world.client.post(REVOKED_PATH, json={"token": token})
        assert r.status_code == 400 and r.get_json()["error"]["code"] == "bad_request"
    with world.app.app_context():
        token = _revocations().dumps({"sid": "s" * 16, "until": 4102444800.0})
    assert world.client.post(REVOKED_PATH, json={"token": token}).status_code == 204
    assert world.client.post(REVOKED_PATH, json={"token": "forged"}).status_code == 403


@pytest.mark.parametrize("method, path, allow", [
    ("POST", "/healthz", "GET"), ("PUT", "/readyz", "GET"), ("DELETE", "/api/v1/version", "GET"),
    ("POST", O + "/history", "GET"), ("GET", "/api/v1/peer/revoked", "POST"), ("GET", "/mcp", "POST"),
])
def test_a_wrong_method_on_the_probes_and_the_api_is_a_json_405_with_allow(world, method, path, allow):
    """Item 21 (API side): ``POST /healthz`` was a 500 with two tracebacks."""
    r = world.client.open(path, method=method)
    assert r.status_code == 405 and r.mimetype == "application/json"
    assert r.get_json()["error"]["code"] == "method_not_allowed"
    assert allow in r.headers["Allow"]
