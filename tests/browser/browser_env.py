"""Constants the browser tests share (Debian's Chromium, the sign-in secrets, viewport sizes)."""

from __future__ import annotations

from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
SCREENSHOTS = Path(__file__).resolve().parents[1] / "screenshots"
ADMIN_TOKEN = "browser-test-admin-token-0123456789"
# An operator account (hashed in the accounts file) limited to owners starting with "user:x".
OPERATOR = ("carol", "correct horse battery staple", "user:x")
LAPTOP = {"width": 1366, "height": 900}
PHONE = {"width": 390, "height": 844}


def open_filters(page) -> None:
    """Unfold the History filters, as an operator on a phone taps "Filters" (a laptop shows them open)."""
    fold = page.locator("details.filters-fold")
    if fold.count() and not fold.evaluate("d => d.open"):
        page.click("details.filters-fold > summary")
