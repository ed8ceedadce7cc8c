"""wikimem log / diff / revert / rollback / restore on a versioned folder."""

from __future__ import annotations

import pytest

pytest.importorskip("dulwich")

from wikimem.cli import main  # noqa: E402
from wikimem.context import WriteContext
from wikimem.versioned import VersionedStore  # noqa: E402


@pytest.fixture
def folder(tmp_path):
    vs = VersionedStore(tmp_path / "m")
    vs.add("prefs", "sea", "likes the sea", ctx=WriteContext(run="good", actor="Elaina"))
    vs.add("prefs", "sea", "hates the sea", ctx=WriteContext(run="bad", actor="Elaina"))
    vs.diary_append("a terrible day", ts="2026-07-21T09:00:00Z", ctx=WriteContext(run="bad", actor="Elaina"))
    vs.close()
    return tmp_path / "m"


def run(folder, *args):
    return main(["--store", str(folder), *args])


def test_log_and_filters(folder, capsys):
    assert run(folder, "log") == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 4 and "diary 2026-07-21 09:00" in out[0] and "run=bad" in out[0]
    assert run(folder, "log", "--run", "good") == 0
    assert len(capsys.readouterr().out.splitlines()) == 1
    assert run(folder, "log", "--run", "nope") == 1


def test_log_by_actor_action_and_time(folder, capsys):
    VersionedStore(folder).add("prefs", "tea", "oolong", ctx=WriteContext(actor="alice"))
    assert run(folder, "log", "--actor", "alice") == 0
    assert [line.split()[2:4] for line in capsys.readouterr().out.splitlines()] == [["add", "prefs/tea"]]
    assert run(folder, "log", "--action", "diary") == 0
    assert len(capsys.readouterr().out.splitlines()) == 1
    assert run(folder, "log", "--until", "2001-01-01") == 1
    assert run(folder, "log", "--since", "2001-01-01", "--actor", "Elaina") == 0
    assert len(capsys.readouterr().out.splitlines()) == 3
    assert run(folder, "log", "--since", "whenever") == 2


def test_log_by_channel(folder, capsys):
    vs = VersionedStore(folder)
    vs.diary_append("in the group", date="2026-07-22", time="10:00", channel="g1", present=["user:ann", "char:kai"])
    vs.diary_append("just us", date="2026-07-22", time="11:00", channel="dm", present=["user:ann", "char:kai"])
    vs.close()
    assert run(folder, "log", "--channel", "g1") == 0
    assert [line.split()[2:5] for line in capsys.readouterr().out.splitlines()] == [["diary", "2026-07-22", "10:00"]]
    assert run(folder, "log", "--channel", "g2") == 1
    assert run(folder, "log", "--channel", "not a channel") == 2


def test_diff_of_a_commit_and_a_span(folder, capsys):
    assert run(folder, "diff", "HEAD", "--patch") == 0
    out = capsys.readouterr().out
    assert "+ diary 2026-07-21 09:00" in out and "+a terrible day" in out


def test_rollback_dry_run_then_for_real_then_conflicting_revert(folder, capsys):
    assert run(folder, "rollback", "bad", "--dry-run") == 0
    assert "~ prefs/sea" in capsys.readouterr().out
    assert VersionedStore(folder).store.get("prefs", "sea").content == "hates the sea"
    assert run(folder, "rollback", "bad") == 0
    assert "commit " in capsys.readouterr().out
    vs = VersionedStore(folder)
    assert vs.store.get("prefs", "sea").content == "likes the sea" and vs.diary.dates() == []
    first_bad = vs.history(run="bad").entries[-1].id
    assert run(folder, "revert", first_bad[:10]) == 0  # the rollback already undid it: nothing to change
    assert "nothing to change" in capsys.readouterr().out
    good = vs.history(run="good").entries[0].id
    vs.add("prefs", "sea", "changed since")
    assert run(folder, "revert", good) == 2
    assert "conflict prefs/sea" in capsys.readouterr().err
    assert vs.store.get("prefs", "sea").content == "changed since"


def test_restore_and_errors(folder, capsys, tmp_path):
    vs = VersionedStore(folder)
    first = vs.history(run="good").entries[0].id
    assert run(folder, "restore", first) == 0
    assert vs.store.get("prefs", "sea").content == "likes the sea"
    assert run(folder, "restore", "not-a-point") == 2
    plain = tmp_path / "plain"
    plain.mkdir()
    assert run(plain, "log") == 2
    assert "not a versioned memory folder" in capsys.readouterr().err


def test_a_dry_run_with_nothing_to_do_says_so(folder, capsys):
    assert run(folder, "rollback", "bad") == 0
    capsys.readouterr()
    assert run(folder, "rollback", "bad", "--dry-run") == 0
    assert capsys.readouterr().out.strip() == "nothing to change: rollback bad would write nothing"


def test_owner_works_for_history_commands(tmp_path, capsys):
    from wikimem.host.owner_ids import encode_owner_id

    vs = VersionedStore(tmp_path / "data" / "owners" / encode_owner_id("user:ann"))
    vs.add("prefs", "sea", "likes the sea", ctx=WriteContext(run="r1"))
    vs.close()
    assert main(["--owner", "user:ann", "--data", str(tmp_path / "data"), "log"]) == 0
    assert "add prefs/sea" in capsys.readouterr().out
