"""docs/guides/operators-channels.md as written: each address of its page list answers in the admin UI over Ann's
rooms, and its Python block prints what the guide says it prints."""

from __future__ import annotations

import os

from docblocks import doc_block, page_addresses, printed_by
from test_admin_channels import client, world  # noqa: F401  (Ann's rooms, a signed-in client)


def test_every_page_the_guide_lists_answers(client):  # noqa: F811
    addresses = page_addresses(doc_block("operators-channels-pages"))
    assert len(addresses) == 6
    for address in addresses:
        r = client.get(address)
        assert r.status_code == 200, (address, r.status_code)


def test_the_python_block_prints_what_the_guide_says(world, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.chdir(tmp_path)  # the guide's "data" is the app's data root
    printed = printed_by(doc_block("operators-channels-python"), "operators-channels.md")
    assert printed == doc_block("operators-channels-printed")
    assert os.path.samefile(tmp_path / "data", world[0].config["DATA_ROOT"])
