"""docs/guides/operators-characters.md as written: each address of its page list answers in the admin UI over a
person with three characters, and its Python block prints what the guide says it prints."""

from __future__ import annotations

import os

from docblocks import doc_block, page_addresses, printed_by
from test_admin_characters import app, client_as  # noqa: F401  (the layered person's app, a signed-in client)


def test_every_page_the_guide_lists_answers(app):  # noqa: F811
    client = client_as(app)
    addresses = page_addresses(doc_block("operators-characters-pages"))
    assert len(addresses) == 11
    for address in addresses:
        r = client.get(address)
        assert r.status_code == 200, (address, r.status_code)


def test_the_python_block_prints_what_the_guide_says(app, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.chdir(tmp_path)  # the guide's "data" is the app's data root
    printed = printed_by(doc_block("operators-characters-python"), "operators-characters.md")
    assert printed == doc_block("operators-characters-printed")
    assert os.path.samefile(tmp_path / "data", app.config["DATA_ROOT"])
