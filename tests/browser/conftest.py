"""One real server and one real Chromium for the browser tests.

Each test gets its own world: a tmp data root seeded through the library
(:mod:`browser_seed`), the real app (``create_app()`` configured by ``WIKIMEM_*``
environment variables, as in production) served by werkzeug's threaded
server on 127.0.0.1. Chromium is Debian's (``/usr/bin/chromium``), driven
by Playwright; no browser is ever downloaded.
"""

from __future__ import annotations

import os
import secrets
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the seed and env modules next to this file

from browser_env import ADMIN_TOKEN, CHROMIUM, CHROMIUM_ARGS, LAPTOP, OPERATOR, PHONE, SCREENSHOTS  # noqa: E402,F401


def pytest_collection_modifyitems(items):
    if os.path.exists(CHROMIUM):
        return
    skip = pytest.mark.skip(reason=f"Debian chromium not installed at {CHROMIUM} (apt-get install chromium)")
    for item in items:
        if "browser" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def screenshots() -> Path:
    SCREENSHOTS.mkdir(exist_ok=True)
    return SCREENSHOTS


@pytest.fixture(scope="session")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"Debian chromium not installed at {CHROMIUM}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@dataclass
class World:
    """A running host: its URL, its data root, and the library's view of the same data."""

    url: str
    root: Path
    host: object   # a wikimem.host.Host of its own over the same data root (a second "process")
    seeded: object

    def owner(self, owner_id: str | None = None):
        return self.host.owner(owner_id or self.seeded.owner)

    def path(self, owner_id: str | None = None) -> Path:
        return self.host.owner_path(owner_id or self.seeded.owner)


@pytest.fixture()
def world(tmp_path, monkeypatch):
    from browser_seed import seed
    from werkzeug.serving import make_server

    from webapp import create_app
    from webapp.session import account_line
    from wikimem.host import make_host

    root = tmp_path / "data"
    seeded = seed(make_host(root))
    accounts = tmp_path / "operators.jsonl"
    accounts.write_text(account_line(*OPERATOR) + "\n", encoding="utf-8")
    monkeypatch.setenv("WIKIMEM_OPERATORS_FILE", str(accounts))
    monkeypatch.setenv("WIKIMEM_DATA", str(root))
    monkeypatch.setenv("WIKIMEM_ADMIN_TOKEN", ADMIN_TOKEN)
    monkeypatch.setenv("WIKIMEM_SECRET_KEY", secrets.token_hex(32))
    app = create_app()
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield World(f"http://127.0.0.1:{server.server_port}", root, make_host(root), seeded)
    finally:
        server.shutdown()
        thread.join()


@pytest.fixture()
def page(browser):
    context = browser.new_context(viewport=LAPTOP)
    pg = context.new_page()
    yield pg
    context.close()


@pytest.fixture()
def signed_in(page, world):
    """The page, signed in through the login form as an operator would."""
    page.goto(world.url + "/admin/")
    page.fill("input[name=token]", ADMIN_TOKEN)
    page.click("#token-submit")
    page.wait_for_url(world.url + "/admin/")
    return page


@pytest.fixture()
def operator_page(browser, world):
    """A factory of signed-in pages: ``operator_page("phone", color_scheme="dark")``.

    Each call opens a new browser context at the named width (``laptop`` or
    ``phone``, see :mod:`browser_env`) with any further Playwright context
    options, and signs in through the login form. All are closed at the end.
    """
    contexts = []

    def open_page(width: str = "laptop", **options):
        viewport = {"laptop": LAPTOP, "phone": PHONE}[width]
        context = browser.new_context(viewport=viewport, is_mobile=width == "phone", **options)
        contexts.append(context)
        pg = context.new_page()
        pg.goto(world.url + "/login")
        pg.fill("input[name=token]", ADMIN_TOKEN)
        pg.click("#token-submit")
        pg.wait_for_url(world.url + "/admin/")
        return pg

    yield open_page
    for context in contexts:
        context.close()
