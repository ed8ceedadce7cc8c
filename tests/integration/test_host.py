"""The host layer over real repositories: owner ids, create/list/export/delete, the LRU, freshness.

Two :class:`Host` objects over one data root stand in for two gunicorn
workers (each process has its own Host); a spawned process is used where
the point is another process.
"""

from __future__ import annotations

import io
import multiprocessing
import os
import subprocess
import tarfile
import zipfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from parallel import run_threads

from wikimem.errors import InvalidName, NotFound
from wikimem.host import decode_owner_id, encode_owner_id, make_host, validate_owner_id

ID_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:@-"
owner_ids = st.builds(lambda first, rest: first + rest, st.sampled_from(ID_CHARS[:62]),
                      st.text(alphabet=ID_CHARS, max_size=127))


@given(owner_ids)
@settings(max_examples=300)
def test_owner_id_encoding_is_reversible_and_filesystem_safe(owner_id):
    folder = encode_owner_id(owner_id)
    assert decode_owner_id(folder) == owner_id
    assert "/" not in folder and not folder.startswith(".") and len(folder.encode()) <= 220
    assert folder == folder.lower() or folder.startswith("~")  # case-insensitive file systems never fold two ids


def test_distinct_ids_never_share_a_folder():
    ids = ["user:x", "User:x", "user_x", "user_3ax", "user.x", "a" * 128, "A" * 128, "a@", "a-"]
    folders = [encode_owner_id(i) for i in ids]
    assert len(set(folders)) == len(ids)


@pytest.mark.parametrize("bad", ["", ".", "..", "...", "a/b", "a\\b", "a\x00b", "user x", "é", "ａ",
                                 "a" * 129, "user:x\n", None, 5, "user:\u202ex",
                                 "--help", "-rf", ".x", "_x", ":x", "@x"])
def test_invalid_owner_ids(bad):
    with pytest.raises(InvalidName):
        validate_owner_id(bad)


@pytest.mark.parametrize("folder", ["..", ".", "User", "user:x", "user_3Ax", "~!!", "~", "_zz", "a_2f.."])
def test_hand_made_folders_are_not_owners(folder):
    assert decode_owner_id(folder) is None


def test_create_list_page_export_delete(tmp_path):
    host = make_host(tmp_path)
    for oid in ("user:b", "user:a", "bot:z", "user:c"):
        host.ensure_owner(oid)
    assert host.ensure_owner("user:a")[1] is False
    (tmp_path / "owners" / "not-an-owner").mkdir()  # no .git: ignored
    (tmp_path / "owners" / "User").mkdir()           # not canonical: ignored
    assert host.owner_ids() == ["bot:z", "user:a", "user:b", "user:c"]
    page, cursor = host.list_owners(prefix="user:", limit=2)
    assert [s.id for s in page] == ["user:a", "user:b"] and cursor == "user:b"
    page, cursor = host.list_owners(prefix="user:", limit=2, cursor=cursor)
    assert [s.id for s in page] == ["user:c"] and cursor is None

    owner = host.owner("user:a")
    owner.vstore.add("preferences", "tea", "乌龙茶", owner="user:a")
    owner.vstore.diary_append("喝了茶。", date="2026-07-21", time="08:00", owner="user:a")
    stats = host.list_owners(prefix="user:a")[0][0]
    assert (stats.items, stats.files, stats.diary_days) == (1, 1, 1) and stats.last_change

    names = zipfile.ZipFile(io.BytesIO(host.export_owner("user:a"))).namelist()
    assert sorted(n.split("/", 1)[1] for n in names) == ["diary/2026-07-21.md", "wiki/preferences.md"]
    with tarfile.open(fileobj=io.BytesIO(host.export_owner("user:a", fmt="tar"))) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("preferences.md"))
        assert "乌龙茶" in tar.extractfile(member).read().decode()

    host.delete_owner("user:a")
    assert not host.exists("user:a") and "user:a" not in host.owner_ids()
    with pytest.raises(NotFound):
        host.owner("user:a")
    with pytest.raises(NotFound):
        host.delete_owner("user:a")
    assert not any((tmp_path / "staging").iterdir())


def test_the_index_lru_is_bounded(tmp_path):
    host = make_host(tmp_path, index_cache=2)
    for oid in ("u:1", "u:2", "u:3"):
        host.ensure_owner(oid)[0].vstore.add("notes", "n", f"note of {oid}", owner=oid)
    for oid in ("u:1", "u:2", "u:3", "u:2"):
        assert host.owner(oid).retrieve("note").items
    assert host.cached_owners() == ["u:3", "u:2"]
    with pytest.raises(ValueError):
        make_host(tmp_path, index_cache=0)


def test_an_index_sees_writes_of_another_host_and_hand_edits(tmp_path):
    a, b = make_host(tmp_path), make_host(tmp_path)
    a.ensure_owner("user:x")
    assert b.owner("user:x").retrieve("lighthouse").items == []   # b's index is built now
    a.owner("user:x").vstore.add("places", "coast", "visited the lighthouse", owner="user:x")
    assert [i.item.name for i in b.owner("user:x").retrieve("lighthouse").items] == ["coast"]
    a.owner("user:x").vstore.remove("places", "coast", owner="user:x")
    assert b.owner("user:x").retrieve("lighthouse").items == []
    # An editor writes a file; a git commit by hand changes another.
    root = b.owner_path("user:x")
    (root / "wiki" / "hand.md").write_text("# hand\n\n## boat\n\nowns a small boat\n", encoding="utf-8")
    assert [i.item.name for i in b.owner("user:x").retrieve("boat").items] == ["boat"]
    (root / "wiki" / "git.md").write_text("# git\n\n## kite\n\nflies a red kite\n", encoding="utf-8")
    subprocess.run(["git", "-C", str(root), "add", "wiki/git.md"], check=True)
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "hand"],
                   check=True)
    assert [i.item.name for i in a.owner("user:x").retrieve("kite").items] == ["kite"]


def test_an_owner_deleted_by_another_host_is_gone_here(tmp_path):
    a, b = make_host(tmp_path), make_host(tmp_path)
    a.ensure_owner("user:x")
    b.owner("user:x")
    a.delete_owner("user:x")
    with pytest.raises(NotFound):
        b.owner("user:x")


def _create(root: str, n: int, out) -> None:
    host = make_host(root)
    owner, created = host.ensure_owner("user:race")
    owner.vstore.add("notes", f"from-{n}", f"process {n}", owner="user:race")
    out.put(created)


def test_processes_creating_one_owner_at_once_make_one_repository(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_create, args=(str(tmp_path), n, out)) for n in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    created = [out.get(timeout=5) for _ in procs]
    assert created.count(True) == 1
    root = make_host(tmp_path).owner_path("user:race")
    names = {i.name for i in make_host(tmp_path).owner("user:race").store.items()}
    assert names == {f"from-{n}" for n in range(4)}
    subprocess.run(["git", "-C", str(root), "fsck", "--strict"], check=True, capture_output=True)
    assert os.listdir(tmp_path / "staging") == []


def test_threads_of_one_host_share_the_owner_safely(tmp_path):
    host = make_host(tmp_path)
    host.ensure_owner("user:t")

    def work(n):
        for k in range(10):
            host.owner("user:t").vstore.add("notes", f"t{n}-{k}", f"thread {n} note {k}", owner="user:t")
            assert host.owner("user:t").retrieve(f"thread {n} note {k}").items

    assert run_threads(work, [(n,) for n in range(4)]) == []
    assert len(host.owner("user:t").store.items()) == 40
    count = subprocess.run(["git", "-C", str(host.owner_path("user:t")), "rev-list", "--count", "main"],
                           check=True, capture_output=True, text=True).stdout.strip()
    assert count == "41"
