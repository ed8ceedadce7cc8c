"""Backup and restore with history (issue 27).

A backup taken while writers keep writing, restored onto a fresh data root,
gives the same heads, ``git fsck --strict`` clean repositories, every write
acknowledged before the backup started, and a host that serves them (its
derived run index made again). Later backups are incremental by owner head;
one owner restores into an existing data root; export over the API has a
bundle form that ``git clone`` reads; an erased owner is purged from the
backup folder by the next backup.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time

import pytest
from apiworld import ADMIN, auth
from traces import traces

from webapp import create_app
from wikimem.host import make_backup, make_host, restore_backup

OWNERS = [f"user:b{i:02d}" for i in range(8)]


def _fsck(folder) -> None:
    subprocess.run(["git", "-C", str(folder), "fsck", "--strict"], check=True, capture_output=True)


def _heads(root) -> dict[str, str]:
    host = make_host(root)
    return {o: host.owner(o).head() for o in host.owner_ids()}


def test_a_backup_under_load_restores_every_acknowledged_write_with_history(tmp_path):
    app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": ADMIN})
    client = app.test_client()
    h = auth(ADMIN)
    for owner in OWNERS:
        client.put(f"/api/v1/owners/{owner}", headers=h)
        client.put(f"/api/v1/owners/{owner}/settings", headers=h, json={"tz": "Asia/Shanghai"})
        for i in range(5):
            client.put(f"/api/v1/owners/{owner}/items/notes/n{i}", headers=h, json={"content": f"{owner} note {i}"})
    acknowledged: list[tuple[str, str]] = []  # (owner, item) of writes answered before the backup started
    started = threading.Event()
    stop = threading.Event()

    def write(k: int) -> None:
        c, i = app.test_client(), 0
        while not stop.is_set():
            owner = OWNERS[(k + i) % len(OWNERS)]
            r = c.put(f"/api/v1/owners/{owner}/items/load/w{k}-{i}", headers=h, json={"content": f"load {k} {i}"})
            if r.status_code in (200, 201) and not started.is_set():
                acknowledged.append((owner, f"w{k}-{i}"))
            i += 1

    writers = [threading.Thread(target=write, args=(k,)) for k in range(3)]
    for w in writers:
        w.start()
    try:
        time.sleep(0.5)
        before = list(acknowledged)  # answered before the backup starts
        started.set()
        report = make_backup(tmp_path / "data", tmp_path / "backup")
        time.sleep(0.2)
    finally:
        stop.set()
        for w in writers:
            w.join()
    assert report.owners == len(OWNERS) and report.bundled == len(OWNERS) and before
    manifest = json.loads((tmp_path / "backup" / report.manifest).read_text())

    restored = restore_backup(tmp_path / "backup", tmp_path / "fresh")
    assert restored.heads == {e["id"]: e["head"] for e in manifest["owners"]}
    assert _heads(tmp_path / "fresh") == restored.heads
    for entry in manifest["owners"]:
        _fsck(tmp_path / "fresh" / "owners" / entry["folder"])
    fresh = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "fresh"), "ADMIN_TOKEN": ADMIN}).test_client()
    for owner, item in before:
        assert fresh.get(f"/api/v1/owners/{owner}/items/load/{item}", headers=h).status_code == 200, (owner, item)
    assert fresh.get(f"/api/v1/owners/{OWNERS[0]}/settings", headers=h).get_json()["settings"]["tz"] == \
        "Asia/Shanghai"
    history = fresh.get(f"/api/v1/owners/{OWNERS[0]}/history?limit=500", headers=h).get_json()["entries"]
    assert len(history) >= 7  # init, settings, five notes: the whole history, not a snapshot
    found = fresh.post(f"/api/v1/owners/{OWNERS[0]}/retrieve", headers=h, json={"query": "note"}).get_json()
    assert found["items"]
    # the run index is derived: a rebuild over the restored data root finds every owner's runs
    make_host(tmp_path / "fresh").fleet.refresh_run_index(full=True)
    runs = fresh.get("/api/v1/runs?owner_prefix=user:b&by=owner&limit=100", headers=h).get_json()
    assert len(runs["owners"]) == len(OWNERS)


def test_backups_are_incremental_by_head_and_one_owner_restores_into_a_live_root(tmp_path):
    data = tmp_path / "data"
    host = make_host(data)
    for owner in OWNERS[:3]:
        host.create_owner(owner).add("notes", "a", f"{owner} a")
    first = make_backup(data, tmp_path / "backup")
    host.owner(OWNERS[1]).add("notes", "b", "changed since")
    second = make_backup(data, tmp_path / "backup")
    assert (first.bundled, second.bundled, second.reused) == (3, 1, 2)
    assert len(list((tmp_path / "backup" / "manifests").glob("*.json"))) == 2

    host.owner(OWNERS[1]).add("notes", "c", "after the backup")
    with pytest.raises(ValueError, match="already holds owners"):
        restore_backup(tmp_path / "backup", data)
    with pytest.raises(ValueError, match="exists"):
        restore_backup(tmp_path / "backup", data, owner=OWNERS[1])
    done = restore_backup(tmp_path / "backup", data, owner=OWNERS[1], replace=True)
    assert host.owner(OWNERS[1]).head() == done.heads[OWNERS[1]]  # the live host opened the restored folder
    assert [i.name for i in host.owner(OWNERS[1]).items("notes")] == ["a", "b"]
    _fsck(host.owner_path(OWNERS[1]))

    keep = make_backup(data, tmp_path / "backup", keep=1)
    assert [p.name for p in (tmp_path / "backup" / "manifests").glob("*.json")] == [keep.manifest.split("/")[1]]


def test_a_write_between_the_look_at_a_head_and_its_bundle_still_restores(tmp_path, monkeypatch):
    """The race the backup under load met once: main moved after the backup looked at it and before the bundle
    was made. The bundle is named by the head it holds, which is the name a restore derives from the manifest."""
    import wikimem.versioned as versioned

    data = tmp_path / "data"
    host = make_host(data)
    owner = host.create_owner(OWNERS[0])
    owner.add("notes", "a", "before the look")
    looked = versioned.branch_head

    def look_then_write(folder):
        head = looked(folder)
        owner.add("notes", "b", "between the look and the bundle")
        return head

    monkeypatch.setattr(versioned, "branch_head", look_then_write)
    report = make_backup(data, tmp_path / "backup")
    monkeypatch.undo()
    restored = restore_backup(tmp_path / "backup", tmp_path / "fresh")
    assert restored.heads[OWNERS[0]] == owner.head()
    assert [i.name for i in make_host(tmp_path / "fresh").owner(OWNERS[0]).items("notes")] == ["a", "b"]
    assert report.bundled == 1


def test_the_cli_backs_up_and_restores_and_the_next_backup_purges_an_erased_owner(tmp_path, capsys):
    from wikimem.cli import main

    data = tmp_path / "data"
    host = make_host(data)
    host.create_owner("user:keep").add("notes", "a", "kept")
    host.create_owner("user:gone").add("notes", "a", "GONE-SECRET-TEXT")
    assert main(["backup", str(tmp_path / "bk"), "--data", str(data)]) == 0
    assert main(["restore", str(tmp_path / "bk"), "--data", str(tmp_path / "fresh")]) == 0
    assert set(_heads(tmp_path / "fresh")) == {"user:keep", "user:gone"}
    assert main(["runs", "--data", str(tmp_path / "fresh")]) == 0  # the restore made the run index again

    assert main(["erase", "user:gone", "--data", str(data), "--yes"]) == 0
    capsys.readouterr()
    assert main(["backup", str(tmp_path / "bk"), "--data", str(data), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["purged"] == 1
    assert traces([tmp_path / "bk"], ["GONE-SECRET-TEXT", "user:gone", "user_3agone"]) == []


def test_export_has_a_bundle_form_that_git_clones(tmp_path):
    app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": ADMIN})
    client = app.test_client()
    h = auth(ADMIN)
    client.put("/api/v1/owners/user:ann", headers=h)
    client.put("/api/v1/owners/user:ann/items/prefs/tea", headers=h, json={"content": "oolong"})
    client.put("/api/v1/owners/user:ann/items/prefs/tea", headers=h, json={"content": "green"})
    r = client.get("/api/v1/owners/user:ann/export?format=bundle", headers=h)
    assert r.status_code == 200 and r.mimetype == "application/x-git-bundle"
    assert 'filename="user_3aann.bundle"' in r.headers["Content-Disposition"]
    (tmp_path / "ann.bundle").write_bytes(r.data)
    subprocess.run(["git", "clone", "-q", str(tmp_path / "ann.bundle"), str(tmp_path / "clone")], check=True)
    log = subprocess.run(["git", "-C", str(tmp_path / "clone"), "log", "-p"], capture_output=True, text=True).stdout
    assert "oolong" in log and "green" in (tmp_path / "clone" / "wiki" / "prefs.md").read_text()


class _LLM:
    def chat(self, messages):
        return json.dumps([{"content": "They talked."}])


def test_the_purge_after_an_erasure_reaches_the_database_copies_and_the_receipt_names_the_backups(tmp_path):
    data = tmp_path / "data"
    host = make_host(data, llm=_LLM())
    host.create_owner("user:keep").add("notes", "a", "kept")
    host.create_owner("user:gone").add("notes", "a", "GONE-NOTE")
    job, _ = host.submit_memorize("user:gone", "user: RAW-TURN-OF-GONE about the sea")
    runner = host.start_jobs()
    deadline = time.monotonic() + 30
    while host.jobs.get(job.id).state != "done" and time.monotonic() < deadline:
        time.sleep(0.05)
    runner.stop()
    first = make_backup(data, tmp_path / "bk", secret="k" * 32)
    assert traces([tmp_path / "bk"], ["RAW-TURN-OF-GONE"])  # the jobs copy holds the raw turn
    erase, _ = host.erase_owner("user:gone")
    runner = host.start_jobs()
    deadline = time.monotonic() + 30
    while host.jobs.get(erase.id).state != "done" and time.monotonic() < deadline:
        time.sleep(0.05)
    runner.stop()
    receipt = host.jobs.get(erase.id).results[0]["result"]
    backups = next(p for p in receipt["places"] if p["place"] == "backups")
    assert str((tmp_path / "bk").resolve()) in backups["where"] and receipt["remains"]  # named, not "nothing left"
    second = make_backup(data, tmp_path / "bk", secret="k" * 32, erased=host.erasure.erased)
    assert second.purged == 1 and second.scrubbed == 2  # the jobs copy of each run
    assert traces([tmp_path / "bk"], ["RAW-TURN-OF-GONE", "GONE-NOTE", "user:gone", "user_3agone"]) == []
    for manifest in (first.manifest, second.manifest):  # each manifest still restores (its checksums re-signed)
        restored = restore_backup(tmp_path / "bk", tmp_path / f"fresh-{manifest[-10:-5]}",
                                  manifest=manifest.split("/")[1], secret="k" * 32)
        assert set(restored.heads) == {"user:keep"} and restored.databases == ["jobs"]


def test_a_write_while_the_bundle_reads_its_refs_still_restores(tmp_path, monkeypatch):
    """The race the backup under load met again: dulwich reads the branches a second time while it makes the
    bundle, and a write landing between the two reads moved main. The manifest says what the bundle holds."""
    import wikimem.versioned.bundles as bundles

    data = tmp_path / "data"
    host = make_host(data)
    owner = host.create_owner(OWNERS[0])
    owner.add("notes", "a", "before the bundle")
    made = bundles.create_bundle_from_repo

    def write_then_bundle(repo, **kwargs):
        owner.add("notes", "b", "while the bundle reads its refs")
        return made(repo, **kwargs)

    monkeypatch.setattr(bundles, "create_bundle_from_repo", write_then_bundle)
    make_backup(data, tmp_path / "backup")
    monkeypatch.undo()
    restored = restore_backup(tmp_path / "backup", tmp_path / "fresh")
    assert restored.heads[OWNERS[0]] == owner.head()
    assert [i.name for i in make_host(tmp_path / "fresh").owner(OWNERS[0]).items("notes")] == ["a", "b"]
