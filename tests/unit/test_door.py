"""The one door of a memory folder: hostile files made by hand are refused, never followed, never waited on.

Every case is a plain store (no git): what a hand edit can leave in a folder —
a link to a file outside it, a link in place of ``wiki/``, a FIFO named
``x.md``, a link to ``/dev/zero``, a file of 50 MB — is a clear
:class:`DamagedFolder` naming the file, and writing over such a file never
writes through it.
"""

from __future__ import annotations

import os
import threading

import pytest

from wikimem import MemoryStore
from wikimem.errors import DamagedFolder, TooLarge
from wikimem.limits import MAX_FILE_BYTES
from wikimem.store import Door


def finishes(fn, seconds: float = 5.0):
    """Run ``fn`` in a thread; its result, or fail when it has not returned in ``seconds`` (it blocked)."""
    out: dict = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"{fn} blocked for {seconds}s"
    if "error" in out:
        raise out["error"]
    return out["value"]


@pytest.fixture
def folder(tmp_path):
    """A store with one wiki file and one diary day, and a secret file beside it (outside the folder)."""
    store = MemoryStore(tmp_path / "mem")
    store.add("notes", "a", "first note")
    store.diary.append("walked", date="2026-07-21", time="09:00")
    secret = tmp_path / "secret.md"
    secret.write_text("## stolen\n\ntop secret\n")
    return store, secret


def test_a_link_to_a_file_outside_is_refused_not_followed(folder):
    store, secret = folder
    os.symlink(secret, store.root / "wiki" / "passwd.md")
    with pytest.raises(DamagedFolder, match="passwd.md is a symbolic link"):
        store.items("passwd")
    with pytest.raises(DamagedFolder):
        store.items()
    assert Door(store.root).stamp("wiki/passwd.md") is not None  # seen, never read


def test_a_linked_wiki_folder_is_refused_even_for_its_listing(folder, tmp_path):
    store, _ = folder
    victim = tmp_path / "victim" / "wiki"
    victim.mkdir(parents=True)
    (victim / "private.md").write_text("## key\n\nvictim's secret\n")
    os.rename(store.root / "wiki", tmp_path / "wiki-aside")
    os.symlink(victim, store.root / "wiki")
    with pytest.raises(DamagedFolder, match="wiki is a symbolic link"):
        store.files()
    with pytest.raises(DamagedFolder):
        store.items("private")
    with pytest.raises(DamagedFolder):
        store.add("private", "key", "overwritten")
    assert (victim / "private.md").read_text() == "## key\n\nvictim's secret\n"


def test_a_fifo_is_refused_without_blocking(folder):
    store, _ = folder
    os.mkfifo(store.root / "wiki" / "x.md")
    os.mkfifo(store.root / "diary" / "2026-07-22.md")
    with pytest.raises(DamagedFolder, match="x.md is a FIFO"):
        finishes(lambda: store.items("x"))
    with pytest.raises(DamagedFolder, match="is a FIFO"):
        finishes(lambda: store.diary.day("2026-07-22"))


def test_a_link_to_dev_zero_is_refused(folder):
    store, _ = folder
    os.symlink("/dev/zero", store.root / "wiki" / "zero.md")
    with pytest.raises(DamagedFolder, match="zero.md is a symbolic link"):
        finishes(lambda: store.items("zero"))


def test_an_oversized_file_is_refused_and_a_write_past_the_limit_too(folder):
    store, _ = folder
    with open(store.root / "wiki" / "big.md", "wb") as fh:
        fh.truncate(50 * 1024 * 1024)
    with pytest.raises(DamagedFolder, match="big.md is 52,428,800 bytes long"):
        finishes(lambda: store.items("big"), seconds=2)
    door = Door(store.root)
    with pytest.raises(TooLarge):
        door.write("wiki/huge.md", b"x" * (MAX_FILE_BYTES + 1))
    assert not (store.root / "wiki" / "huge.md").exists()


def test_a_journal_or_settings_link_is_refused(folder, tmp_path):
    store, secret = folder
    outside = tmp_path / "outside.jsonl"
    outside.write_text("")
    os.unlink(store.root / "journal.jsonl")
    os.symlink(outside, store.root / "journal.jsonl")
    with pytest.raises(DamagedFolder, match="symbolic link"):
        store.add("notes", "b", "second")
    assert outside.read_text() == ""  # nothing appended outside the folder
    assert store.get("notes", "b") is None  # the write was rolled back
    os.symlink(secret, store.root / "settings.json")
    with pytest.raises(DamagedFolder):
        Door(store.root).read("settings.json")


@pytest.mark.parametrize("rel", ["wiki/../../secret.md", "../secret.md", "/etc/passwd", "wiki/.hidden.md",
                                 "wiki/sub/x.md", "tokens.jsonl", ".git/config", "wiki/x.md\x00", "diary/..md",
                                 "wiki", ""])
def test_a_path_outside_the_folder_rules_is_refused_before_the_file_system(tmp_path, rel):
    door = Door(tmp_path / "mem")
    for action in (lambda: door.read(rel), lambda: door.write(rel, b"x"), lambda: door.remove(rel)):
        with pytest.raises(DamagedFolder, match="refused path"):
            action()
    assert not (tmp_path / "secret.md").exists()


def test_writing_over_a_link_replaces_the_link_and_leaves_its_target_alone(folder):
    store, secret = folder
    before = secret.read_text()
    link = store.root / "wiki" / "notes.md"
    os.unlink(link)
    os.symlink(secret, link)
    Door(store.root).write("wiki/notes.md", b"## a\n\nmine\n")
    assert not link.is_symlink() and link.read_text() == "## a\n\nmine\n"
    assert secret.read_text() == before
    os.symlink(secret, store.root / "wiki" / "gone.md")
    Door(store.root).remove("wiki/gone.md")
    assert secret.exists() and not os.path.lexists(store.root / "wiki" / "gone.md")


def test_a_linked_lock_file_is_refused_not_followed(folder, tmp_path):
    store, _ = folder
    elsewhere = tmp_path / "other-owner.lock"
    elsewhere.write_text("")
    os.unlink(store.root / ".wikimem.lock")
    os.symlink(elsewhere, store.root / ".wikimem.lock")
    with pytest.raises(DamagedFolder, match="symbolic link"):
        store.add("notes", "b", "second")
