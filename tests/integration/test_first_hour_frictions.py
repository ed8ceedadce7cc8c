"""The frictions a newcomer met in the first hour (issue 36), each fixed where it was met."""

from __future__ import annotations

import socket
import stat
from pathlib import Path
from types import SimpleNamespace

import pytest

from webapp.admin.rendering.months import month_view
from wikimem.cli.hostcmd import _tokens_file, busy_port_message, demo_line, token_lines
from wikimem.context import WriteContext
from wikimem.host import make_host

# -- the Diary tab: the latest day not after today; later days are planned -------------------------

def test_the_diary_opens_on_the_latest_day_not_after_today():
    view = month_view(["2026-07-01", "2026-07-20", "2026-07-28", "2026-08-02"], today="2026-07-21")
    assert (view.month, view.latest, view.today) == ("2026-07", "2026-07-20", "2026-07-21")
    days = {d.date: d for week in view.weeks for d in week}
    assert days["2026-07-28"].planned and days["2026-07-28"].has_entries
    assert not days["2026-07-20"].planned and not days["2026-07-21"].planned


def test_a_month_of_plans_only_opens_on_its_first_day():
    assert month_view(["2026-07-01", "2026-08-02", "2026-08-09"], "2026-08", today="2026-07-21").latest == "2026-08-02"
    only_plans = month_view(["2026-08-02"], today="2026-07-21")
    assert (only_plans.month, only_plans.latest) == ("2026-08", "2026-08-02")


# -- make run: a tokens file beside the data; the owners it finds are not "demo data" -------------

def test_the_development_tokens_file_is_made_once_for_this_user_only(tmp_path):
    made = _tokens_file(tmp_path, None)
    assert made == tmp_path / "tokens.jsonl" and stat.S_IMODE(made.stat().st_mode) == 0o600
    made.write_text('{"name": "kept"}\n')
    assert _tokens_file(tmp_path, None).read_text() == '{"name": "kept"}\n'  # never truncated
    assert _tokens_file(tmp_path, "/etc/wikimem/tokens.jsonl") == Path("/etc/wikimem/tokens.jsonl")
    assert not (tmp_path / "other").exists()
    (line, mint) = token_lines(Path("var/data/tokens.jsonl"))
    assert "works at once" in line and mint.strip().startswith("mint one:") and \
        mint.endswith("token mint my-bot --scope read --scope write --owner-prefix user: --file var/data/tokens.jsonl")


def test_the_start_message_does_not_call_the_users_owners_demo_data(tmp_path):
    from wikimem.host import seed_demo

    host = make_host(tmp_path / "data")
    assert demo_line(seed_demo(host)) == "demo data: user:xnne, user:lumi, user:sam"
    host.ensure_owner("user:ann")
    assert demo_line(seed_demo(host)) == "demo data: user:xnne, user:lumi, user:sam (already there); " \
                                         "and 1 owner of yours"
    mine = make_host(tmp_path / "mine")
    mine.ensure_owner("user:ann")
    mine.ensure_owner("user:bob")
    assert demo_line(seed_demo(mine)) == "demo data: not added, the data root already holds 2 owners of yours"
    assert demo_line(SimpleNamespace(created=False, owners=(), others=1)).endswith("1 owner of yours")


# -- a busy port: the suggested one is free -----------------------------------------------------

def test_the_suggested_port_is_one_that_is_free():
    with socket.socket() as first, socket.socket() as second:
        first.bind(("127.0.0.1", 0))
        first.listen(1)
        port = first.getsockname()[1]
        try:
            second.bind(("127.0.0.1", port + 1))
            second.listen(1)
        except OSError:
            pytest.skip("the next port is taken by someone else already")
        message = busy_port_message("127.0.0.1", port, OSError(98, "Address already in use"))
    assert f"WIKIMEM_BIND=127.0.0.1:{port + 1}" not in message  # taken: not suggested
    suggested = int(message.split("WIKIMEM_BIND=127.0.0.1:", 1)[1].split()[0])
    assert suggested > port + 1
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", suggested))  # free indeed


# -- the owners list by last change --------------------------------------------------------------

def test_owners_by_last_change_page_newest_first(tmp_path):
    import time

    host = make_host(tmp_path / "data")
    for name in ("user:a", "user:b", "user:c", "bot:x"):
        owner, _ = host.ensure_owner(name)
        owner.vstore.add("notes", "n", "x", ctx=WriteContext(actor="t"))
    time.sleep(1.1)  # commit times are in seconds
    host.owner("user:a").vstore.add("notes", "n", "y", ctx=WriteContext(actor="t"))
    first, cursor = host.owners_by_last_change(prefix="user:", limit=2)
    assert first[0].id == "user:a" and len(first) == 2 and cursor
    rest, done = host.owners_by_last_change(prefix="user:", limit=2, cursor=cursor)
    # b and c may fall in one second or two (a loaded machine): each exactly once, across the two pages
    assert len(rest) == 1 and {first[1].id, rest[0].id} == {"user:b", "user:c"} and done is None
    assert host.owners_by_last_change(within="bot:")[0][0].id == "bot:x"
    assert host.owners_by_last_change(prefix="user:", within="bot:") == ([], None)
