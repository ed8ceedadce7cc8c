"""The admin UI's Links tab through Flask's test client (issue 35): the graph of ``wikimem graph``, escaped."""

from __future__ import annotations

import re

import pytest

from webapp import create_app
from webapp.hosting import get_host
from wikimem.context import WriteContext
from wikimem.linkgraph import link_graph

ADMIN = "admin-links-token-0123456789"


@pytest.fixture
def client(tmp_path):
    app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": ADMIN})
    with app.app_context():
        owner, _ = get_host().ensure_owner("user:xnne")
        ctx = WriteContext(actor="seed")
        owner.add("preferences", "likes-the-sea", "海边 [[daily_life:trip]] [[missing:<b>gone</b>]]", ctx=ctx)
        owner.add("daily_life", "trip", "去海边。", ctx=ctx)
        owner.add("notes", "alone", "no links", ctx=ctx)
    c = app.test_client()
    token = re.search(r'name="csrf_token"[^>]*value="([^"]+)"', c.get("/login").get_data(as_text=True)).group(1)
    c.post("/login", data={"csrf_token": token, "token": ADMIN})
    return c


def test_the_links_tab_shows_the_graph_of_wikimem_graph(client):
    html = client.get("/admin/owners/user:xnne/links").get_data(as_text=True)
    assert '<a href="/admin/owners/user:xnne/links" class="active">Links</a>' in html
    assert "<b>2</b> linked items" in html and "<b>2</b> links" in html and "<b>1</b> dangling" in html
    assert "1 item without links" in html
    assert "[[missing:&lt;b&gt;gone&lt;/b&gt;]]" in html and "<b>gone</b>" not in html  # escaped
    assert 'href="/admin/owners/user:xnne/items/daily_life/trip"' in html
    graph = link_graph([type("I", (), {"file": f, "name": n, "content": c}) for f, n, c in (
        ("preferences", "likes-the-sea", "海边 [[daily_life:trip]] [[missing:<b>gone</b>]]"),
        ("daily_life", "trip", ""), ("notes", "alone", ""))])
    mermaid = html.split('<code id="mermaid">')[1].split("</code>")[0]
    assert mermaid.replace("&#34;", '"').replace("&gt;", ">").replace("&lt;", "<") == graph.to_mermaid()


def test_the_links_tab_of_an_owner_without_links_and_of_none(client):
    assert client.get("/admin/owners/user:nobody/links").status_code == 404
    with client.application.app_context():
        get_host().ensure_owner("user:empty")
    html = client.get("/admin/owners/user:empty/links").get_data(as_text=True)
    assert "No item links to another yet" in html and 'id="dangling"' not in html
