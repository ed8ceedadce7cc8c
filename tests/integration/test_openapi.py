"""The OpenAPI document matches the app, and the running app matches the document.

1. Every ``/api/v1`` route of the Flask app (method and path) is in the
   document, and nothing else is.
2. schemathesis fuzzes a real HTTP server (werkzeug, in a thread) serving the
   real app over a real data root, from the document served at
   ``/api/v1/openapi.json``: no 5xx, every status, content type, header and
   body as documented.
"""

from __future__ import annotations

import os
import re
import secrets
import threading

import pytest

schemathesis = pytest.importorskip("schemathesis")
from fakes import FakeOpenAI  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402
from schemathesis.specs.openapi import checks as oa_checks  # noqa: E402
from werkzeug.serving import make_server  # noqa: E402

from webapp import create_app  # noqa: E402
from webapp.openapi import document  # noqa: E402

TOKEN = "test-admin-" + secrets.token_hex(8)
_VERBS = {"get", "put", "post", "delete", "patch"}


def _app(tmp_path, **extra):
    return create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": TOKEN, **extra})


def test_document_lists_exactly_the_api_routes(tmp_path):
    app = _app(tmp_path)
    routes = set()
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith("/api/v1/"):
            continue
        path = re.sub(r"<(?:[a-z]+:)?([a-z_]+)>", r"{\1}", rule.rule[len("/api/v1"):])
        routes |= {(m.lower(), path) for m in rule.methods if m.lower() in _VERBS}
    doc = document()
    documented = {(verb, path) for path, item in doc["paths"].items() for verb in item if verb in _VERBS}
    assert routes == documented
    served = app.test_client().get("/api/v1/openapi.json").get_json()
    assert served == doc and served["openapi"].startswith("3.0")


def test_every_path_parameter_is_declared():
    for path, item in document()["paths"].items():
        declared = {p["name"] for p in item.get("parameters", [])}
        for verb, op in item.items():
            if verb in _VERBS:
                names = declared | {p["name"] for p in op.get("parameters", []) if p["in"] == "path"}
                assert set(re.findall(r"{(\w+)}", path)) <= names, (verb, path)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    # memorize gets a real chat endpoint on 127.0.0.1 (without one it is a documented 501, a 5xx).
    llm = FakeOpenAI().start()
    app = _app(root, LLM_URL=llm.url, LLM_MODEL="fake-chat")
    client = app.test_client()
    auth = {"Authorization": f"Bearer {TOKEN}"}
    # A little memory so that reads and history have something to find.
    client.put("/api/v1/owners/user:xnne", headers=auth)
    client.put("/api/v1/owners/user:xnne/items/preferences/likes%20the%20sea", headers=auth, json={"content": "likes [[preferences:x]]"})
    client.post("/api/v1/owners/user:xnne/diary", headers=auth, json={"content": "去了海边", "date": "2026-07-21"})
    srv = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{srv.server_port}", app
    srv.shutdown()
    llm.stop()


# The same document the server serves (the first test proves they are equal).
schema = schemathesis.openapi.from_dict(document())
# Valid and invalid requests both: invalid ones must get a documented 4xx, never a 5xx.
schema.config.generation.update(modes=list(schemathesis.GenerationMode))

CHECKS = [
    schemathesis.checks.not_a_server_error,
    oa_checks.status_code_conformance,
    oa_checks.content_type_conformance,
    oa_checks.response_headers_conformance,
    oa_checks.response_schema_conformance,
]


@pytest.mark.slow
@schema.parametrize()
@settings(max_examples=int(os.environ.get("WIKIMEM_FUZZ_EXAMPLES", "30")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.filter_too_much, HealthCheck.data_too_large])
def test_fuzzed_requests_get_documented_answers(case, server):
    base, _ = server
    case.call_and_validate(base_url=base + "/api/v1", headers={"Authorization": f"Bearer {TOKEN}"},
                           checks=CHECKS)
