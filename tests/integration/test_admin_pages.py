"""The admin pages through Flask's test client: sign-in, CSRF, an operator's owner prefix, undo conflicts.

The browser tests drive the same pages in Chromium; these pin the rules a
browser would hide: a form without its CSRF token is refused, an owner
outside the operator's prefix does not exist for them (404), and a revert
that meets a later change answers 409 and writes nothing.
"""

from __future__ import annotations

import re

import pytest

from webapp import create_app
from webapp.hosting import get_host
from webapp.session import account_line
from wikimem.context import WriteContext

ADMIN = "admin-pages-token-0123456789"
CAROL = ("carol", "correct horse battery staple", "user:x")


@pytest.fixture
def app(tmp_path):
    operators = tmp_path / "operators.jsonl"
    operators.write_text(account_line(*CAROL) + "\n", encoding="utf-8")
    app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": ADMIN,
                      "OPERATORS_FILE": str(operators)})
    with app.app_context():
        host = get_host()
        for owner_id in ("user:xnne", "user:lumi"):
            owner, _ = host.ensure_owner(owner_id)
            owner.add("preferences", "tea", "喝乌龙茶。", ctx=WriteContext(actor="seed"))
    return app


def csrf(html: str) -> str:
    found = re.search(r'name="csrf_token"[^>]*value="([^"]+)"', html)
    assert found, "the page has no CSRF token field"
    return found.group(1)


def sign_in(client, **form) -> object:
    token = csrf(client.get("/login").get_data(as_text=True))
    return client.post("/login", data={"csrf_token": token, **form})


def head(app, owner_id: str = "user:xnne") -> str:
    with app.app_context():
        return get_host().owner(owner_id).head()


def test_admin_pages_send_a_stranger_to_sign_in_and_back(app):
    client = app.test_client()
    r = client.get("/admin/owners/user:xnne/history")
    assert r.status_code == 302 and r.headers["Location"].startswith("/login?next=")
    r = sign_in(client, token=ADMIN, next="/admin/owners/user:xnne/history")
    assert r.status_code == 302 and r.headers["Location"] == "/admin/owners/user:xnne/history"
    assert "喝乌龙茶" in client.get("/admin/owners/user:xnne").get_data(as_text=True)


def test_sign_in_without_its_csrf_token_is_refused(app):
    client = app.test_client()
    client.get("/login")
    r = client.post("/login", data={"token": ADMIN})
    assert r.status_code == 400
    assert client.get("/admin/").status_code == 302  # still signed out


@pytest.mark.parametrize("form", [{"token": "not-the-token"}, {"username": "carol", "password": "wrong"}])
def test_wrong_credentials_are_refused(app, form):
    client = app.test_client()
    assert sign_in(client, **form).status_code == 401
    assert client.get("/admin/").status_code == 302


def test_an_operator_sees_only_the_owners_of_their_prefix(app):
    client = app.test_client()
    assert sign_in(client, username=CAROL[0], password=CAROL[1]).status_code == 302
    listing = client.get("/admin/").get_data(as_text=True)
    assert "user:xnne" in listing and "user:lumi" not in listing
    assert client.get("/admin/owners/user:xnne").status_code == 200
    for path in ("/admin/owners/user:lumi", "/admin/owners/user:lumi/history", "/admin/owners/user:lumi/export",
                 "/admin/owners/user:lumi/search?q=tea"):
        assert client.get(path).status_code == 404, path
    # a search outside the prefix lists nothing rather than widening the scope
    assert "user:lumi" not in client.get("/admin/?prefix=user:l").get_data(as_text=True)


def test_revert_that_meets_a_later_change_is_409_and_writes_nothing(app):
    with app.app_context():
        owner = get_host().owner("user:xnne")
        first = owner.add("preferences", "tea", "喝红茶。", ctx=WriteContext(actor="bot")).commit
        owner.add("preferences", "tea", "改喝咖啡了。", ctx=WriteContext(actor="bot"))
    client = app.test_client()
    sign_in(client, token=ADMIN)
    page = client.get(f"/admin/owners/user:xnne/commits/{first}/revert")
    assert page.status_code == 200 and "changed again later" in page.get_data(as_text=True)
    before = head(app)
    r = client.post(f"/admin/owners/user:xnne/commits/{first}/revert",
                    data={"csrf_token": csrf(page.get_data(as_text=True))})
    assert r.status_code == 409 and "changed after" in r.get_data(as_text=True)
    assert head(app) == before
    r = client.post(f"/admin/owners/user:xnne/commits/{first}/revert", data={})  # no CSRF token
    assert r.status_code == 400 and head(app) == before
    r = client.post(f"/admin/owners/user:xnne/commits/{first}/revert",
                    data={"csrf_token": csrf(page.get_data(as_text=True)), "force": "on"})
    assert r.status_code == 302 and head(app) != before
    with app.app_context():
        assert get_host().owner("user:xnne").item("preferences", "tea").content == "喝乌龙茶。"


def test_logout_needs_its_csrf_token_and_ends_the_session(app):
    client = app.test_client()
    sign_in(client, token=ADMIN)
    page = client.get("/admin/").get_data(as_text=True)
    assert client.post("/logout").status_code == 400
    assert client.get("/admin/").status_code == 200
    assert client.post("/logout", data={"csrf_token": csrf(page)}).status_code == 302
    assert client.get("/admin/").status_code == 302


def test_a_huge_commit_page_highlights_within_its_budget_and_summarises_the_rest(app):
    import random

    rng = random.Random(7)
    text = lambda: "".join(rng.choice("abcdefghij 海边咖啡") for _ in range(4000))  # noqa: E731
    with app.app_context():
        owner = get_host().owner("user:xnne")
        ops = [{"op": "add", "file": "bulk", "name": f"n{i}", "content": text()} for i in range(40)]
        first = owner.apply_ops(ops, ctx=WriteContext(actor="bot")).commit
        second = owner.apply_ops([{**op, "content": text()} for op in ops], ctx=WriteContext(actor="bot")).commit
    client = app.test_client()
    sign_in(client, token=ADMIN)
    for path in (f"/admin/owners/user:xnne/commits/{second}", f"/admin/owners/user:xnne/commits/{first}/revert"):
        page = client.get(path)
        assert page.status_code == 200
        html = page.get_data(as_text=True)
        assert html.count('class="change ') >= 40
        assert "spent its diff budget" in html  # the items past the budget are shown, not highlighted
        assert "<del" in html or "<ins" in html or 'class="del"' in html or 'class="ins"' in html


def test_the_search_page_chooses_how_the_diary_is_recalled(app):
    with app.app_context():
        get_host().owner("user:xnne").diary_append("Went to the seaside with Lumi.", date="2020-02-29",
                                                   ctx=WriteContext(actor="seed"))
    client = app.test_client()
    sign_in(client, token=ADMIN)
    url = "/admin/owners/user:xnne/search"
    window = client.get(url, query_string={"q": "seaside", "submitted": "1", "diary": "window"})
    assert window.status_code == 200 and "Went to the seaside" not in window.get_data(as_text=True)
    every = client.get(url, query_string={"q": "seaside", "submitted": "1", "diary": "all"}).get_data(as_text=True)
    assert "Went to the seaside" in every and "every diary day searched" in every
    assert '<option value="all" selected' in every
    bad = client.get(url, query_string={"q": "seaside", "submitted": "1", "diary": "some"})
    assert bad.status_code == 400 and "diary must be one of window, all" in bad.get_data(as_text=True)
