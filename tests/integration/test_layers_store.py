"""A character's layer inside a person's folder (SPEC §11): ``characters/<id>/`` in the seed's format, written by
the folder's one writer (one lock, one history), read back by the plain library.

Real repositories under ``tmp_path``; the ``git`` command line is the independent witness.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from wikimem import MemoryStore
from wikimem.context import WriteContext
from wikimem.errors import InvalidName
from wikimem.versioned import Target, VersionedStore


def git(folder, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def vs(tmp_path):
    store = VersionedStore(tmp_path / "ann")
    yield store
    store.close()


def test_a_layers_write_is_one_commit_in_its_folder_and_the_plain_library_reads_it(vs):
    kai = Target(vs, "kai")
    done = kai.add("preferences", "tea", "Ann told Kai she drinks oolong.", ctx=WriteContext(actor="kai"))
    kai.diary_append("We walked by the sea.", date="2026-07-21", time="09:00", ctx=WriteContext(actor="kai"))
    assert (vs.root / "characters" / "kai" / "wiki" / "preferences.md").is_file()
    assert not (vs.root / "wiki" / "preferences.md").exists()  # the shared layer is untouched
    plain = MemoryStore(vs.root / "characters" / "kai")
    assert plain.get("preferences", "tea").content == "Ann told Kai she drinks oolong."
    assert [e.content for e in plain.diary.day("2026-07-21")] == ["We walked by the sea."]
    assert vs.store.items() == [] and vs.store.layer("kai").files() == ["preferences"]
    message = git(vs.root, "log", "-1", "--format=%B", done.commit)
    assert "Wikimem-Layer: kai" in message and "add preferences/tea in kai" in message.splitlines()[0]
    assert git(vs.root, "status", "--porcelain") == "" and git(vs.root, "fsck", "--strict").strip() == ""


def test_history_by_layer_and_item_diffs_say_their_layer(vs):
    vs.add("preferences", "tea", "Drinks green tea.")
    Target(vs, "kai").add("preferences", "tea", "Kai's note on tea.")
    Target(vs, "mira").add("people", "lu", "Mira met Lu.")
    shared = [e.summary for e in vs.db.page(layers=(None,)).entries]
    kai = [e.summary for e in vs.db.page(layers=("kai",)).entries]
    both = [e.summary for e in vs.db.page(layers=(None, "kai")).entries]
    assert "add preferences/tea" in shared and not any("in kai" in s or "in mira" in s for s in shared)
    assert "add preferences/tea in kai" in kai and not any("mira" in s or s == "add preferences/tea" for s in kai)
    assert "add preferences/tea" in both and "add preferences/tea in kai" in both and len(both) == len(kai) + 1
    item = vs.db.page(file="preferences", item="tea", layers=("kai",)).entries
    assert [e.summary for e in item] == ["add preferences/tea in kai"]
    change = vs.show_commit("HEAD~1").changes
    assert [(c.layer, c.file, c.name) for c in change] == [("kai", "preferences", "tea")]


def test_one_unit_may_span_layers_and_says_each(vs):
    with vs.batch(WriteContext(actor="kai", run="run_1"), kind="memorize", action="memorize") as b:
        vs.store.layer("kai").diary.append("Met Ann.", date="2026-07-21", time="10:00")
        vs.store.add("people", "ann", "Ann likes the sea.")
        b.result = {}
    message = git(vs.root, "log", "-1", "--format=%B", b.commit)
    assert "Wikimem-Layer: shared" in message and "Wikimem-Layer: kai" in message


def test_a_hand_edit_inside_a_layer_is_picked_up_as_an_external_edit(vs):
    Target(vs, "kai").add("preferences", "tea", "Oolong.")
    path = vs.root / "characters" / "kai" / "wiki" / "preferences.md"
    path.write_text(path.read_text(encoding="utf-8").replace("Oolong.", "Green tea, by hand."), encoding="utf-8")
    vs.add("people", "lu", "A friend.")  # the next write commits the hand edit first
    log = git(vs.root, "log", "--format=%s|%(trailers:key=Wikimem-Layer,valueonly,separator=%x2C)", "-3")
    assert "external-edit: 1 file changed outside wikimem|kai" in log
    assert vs.store.layer("kai").get("preferences", "tea").content == "Green tea, by hand."


@pytest.mark.parametrize("bad", ["Kai", "../x", "a/b", "", "x" * 65])
def test_a_layer_must_be_a_character_id(vs, bad):
    with pytest.raises(InvalidName):
        Target(vs, bad)


def test_a_link_in_place_of_a_layer_folder_is_refused_and_repaired(vs, tmp_path):
    Target(vs, "kai").add("preferences", "tea", "Oolong.")
    outside = tmp_path / "outside"
    (outside / "wiki").mkdir(parents=True)
    (outside / "wiki" / "secrets.md").write_text("# secrets\n\n## x\n\nstolen\n", encoding="utf-8")
    (vs.root / "characters" / "mira").symlink_to(outside, target_is_directory=True)
    from wikimem.errors import DamagedFolder

    with pytest.raises(DamagedFolder):
        vs.add("people", "lu", "A friend.")
    done = vs.repair()
    assert any("characters/mira" in line for line in done)
    vs.add("people", "lu", "A friend.")
    assert not os.path.islink(vs.root / "characters" / "mira") and git(vs.root, "fsck", "--strict").strip() == ""
    assert "stolen" not in git(vs.root, "log", "-p", "--all")


def test_an_honest_layer_passes_the_checks_of_what_a_remote_sends(vs):
    from wikimem.versioned.replication.incoming import check_incoming

    Target(vs, "kai").add("preferences", "tea", "Oolong.")
    Target(vs, "kai").diary_append("Met Ann.", date="2026-07-21", time="09:00")
    assert check_incoming(vs.git.repo.object_store, vs.git.head(), [None]) == 3
