"""The reference pages are generated from the code: a change to the OpenAPI document, the variable table
or the CLI parser without `make docs` fails here (issue 36)."""

from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path

import pytest
from docblocks import doc_blocks

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import reference_docs  # noqa: E402


def test_the_committed_reference_pages_are_what_the_code_generates():
    assert reference_docs.stale(REPO) == [], "run `make docs`"


def test_the_http_reference_shows_the_documents_examples():
    from webapp.openapi import document

    shown = [json.loads(b.text) for b in doc_blocks("reference-http-api")]
    examples = [op["requestBody"]["content"]["application/json"]["example"]
                for item in document()["paths"].values() for op in item.values()
                if isinstance(op, dict) and "example" in ((op.get("requestBody") or {}).get("content") or {})
                .get("application/json", {})]
    def key(x: object) -> str:
        return json.dumps(x, sort_keys=True, ensure_ascii=False)

    assert shown and sorted(map(key, shown)) == sorted(map(key, examples))  # (the page groups them by tag)


def test_a_new_route_changes_the_http_page(monkeypatch):
    import webapp.openapi as openapi

    real = openapi.document

    def more() -> dict:
        doc = copy.deepcopy(real())
        doc["paths"]["/owners/{owner_id}/dance"] = {"post": {"summary": "dance", "operationId": "dance",
                                                             "tags": ["memory"], "responses": {"200": {
                                                                 "description": "OK"}}}}
        return doc

    monkeypatch.setattr(openapi, "document", more)
    assert "`POST /owners/{owner_id}/dance`" in reference_docs.http_api_page()
    assert "docs/reference/http-api.md" in reference_docs.stale(REPO)


def test_a_new_option_changes_the_cli_page(monkeypatch):
    import wikimem.cli as cli

    real = cli.build_parser

    def more() -> argparse.ArgumentParser:
        parser = real()
        parser.add_argument("--colour", help="paint the output")
        return parser

    monkeypatch.setattr(cli, "build_parser", more)
    assert "| `--colour` | paint the output |" in reference_docs.cli_page()
    assert "docs/reference/cli.md" in reference_docs.stale(REPO)


def test_a_new_variable_changes_the_configuration_page(monkeypatch):
    from wikimem.host import variables

    real = variables.markdown_tables
    monkeypatch.setattr(variables, "markdown_tables", lambda groups=None: real(groups) + "| `WIKIMEM_DANCE` |\n")
    assert "docs/reference/configuration.md" in reference_docs.stale(REPO)


@pytest.mark.parametrize("page", [reference_docs.HTTP_API, reference_docs.CLI])
def test_the_generated_pages_say_so(page):
    assert (REPO / page).read_text(encoding="utf-8").startswith(reference_docs.GENERATED)
