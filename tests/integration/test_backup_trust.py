"""A backup folder is untrusted input: a hostile manifest writes nothing outside the data root it restores into,
reads nothing from outside the backup folder, and its databases are restored only from a signed manifest.

Real backups of real data roots; the attacker edits the backup folder (manifest, bundles, links) the way anyone
who can write it could, checksums included.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from wikimem.errors import InvalidValue
from wikimem.host import make_backup, make_host, restore_backup

REPO = Path(__file__).resolve().parents[2]
KEY = "backup-signing-secret-0123456789abcdef"
OUTSIDE = b"OUTSIDE-SECRET-never-to-enter-a-data-root\n"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


LIVE = ("data", "other")  # the data roots of the fixture's hosts, still running in this process


def _tree(top: Path, skip: Path) -> dict[str, tuple]:
    """Every entry under ``top`` but ``skip``: kind and content hash (links as their target). The SQLite files of
    the fixture's live hosts are listed by name only (their WAL and shared-memory files not at all): their background
    work (the run index catching up, a checkpoint) may rewrite them at any moment; a file a restore added or any
    other byte changed still shows."""
    out = {}
    for folder, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if Path(folder) / d != skip]
        for name in dirs + files:
            path = Path(folder) / name
            rel = str(path.relative_to(top))
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path))
            elif path.is_file() and ".sqlite3" in name and path.relative_to(top).parts[0] in LIVE:
                if not name.endswith(("-wal", "-shm", "-journal")):  # (those come and go with the connections)
                    out[rel] = ("file", "a live host's database")
            elif path.is_file():
                out[rel] = ("file", _sha(path))
            else:
                out[rel] = ("dir",)
    return out


def _contains(top: Path, needle: bytes) -> list[str]:
    return [str(p) for p in top.rglob("*") if p.is_file() and not p.is_symlink() and needle in p.read_bytes()]


@pytest.fixture
def backup(tmp_path) -> Path:
    host = make_host(tmp_path / "data")
    host.create_owner("user:ann").add("notes", "tea", "likes green tea")
    host.create_owner("user:bob").add("notes", "sea", "likes the sea")
    host.jobs.db.execute("SELECT 1")  # the jobs database exists: it is backed up
    (tmp_path / "outside.txt").write_bytes(OUTSIDE)
    other = make_host(tmp_path / "other")  # someone else's owner: a bundle outside the backup folder
    other.create_owner("user:eve").add("notes", "pin", OUTSIDE.decode())
    make_backup(tmp_path / "other", tmp_path / "other-backup", secret=KEY)
    report = make_backup(tmp_path / "data", tmp_path / "bk", secret=KEY)
    assert report.signed and report.databases
    return tmp_path / "bk"


def _manifest(bk: Path) -> tuple[Path, dict]:
    path = sorted((bk / "manifests").glob("*.json"))[-1]
    return path, json.loads(path.read_text())


def db_path_escape(bk: Path, data: dict) -> None:
    data["databases"][0]["path"] = "../escaped.sqlite3"


def db_file_outside(bk: Path, data: dict) -> None:
    outside = bk.parent / "outside.txt"
    data["databases"][0].update(file="../outside.txt", sha256=_sha(outside))


def db_file_link(bk: Path, data: dict) -> None:
    copy = bk / data["databases"][0]["file"]
    copy.unlink()
    copy.symlink_to(bk.parent / "outside.txt")
    data["databases"][0]["sha256"] = _sha(bk.parent / "outside.txt")


def _theirs(bk: Path) -> Path:
    return next((bk.parent / "other-backup" / "bundles").glob("*/*.bundle"))


def bundle_outside(bk: Path, data: dict) -> None:
    theirs = _theirs(bk)
    data["owners"][0].update(bundle=os.path.relpath(theirs, bk), sha256=_sha(theirs), head=theirs.stem)


def bundle_link(bk: Path, data: dict) -> None:
    theirs = _theirs(bk)
    (bk / data["owners"][0]["bundle"]).unlink()
    mine = bk / "bundles" / data["owners"][0]["folder"] / theirs.name
    mine.symlink_to(theirs)
    data["owners"][0].update(bundle=str(mine.relative_to(bk)), sha256=_sha(theirs), head=theirs.stem)


def folder_escape(bk: Path, data: dict) -> None:
    data["owners"][0]["folder"] = "../../escaped-owner"


def bundles_folder_link(bk: Path, data: dict) -> None:
    folder = bk / "bundles" / data["owners"][0]["folder"]
    theirs = _theirs(bk)
    for f in folder.iterdir():
        f.unlink()
    folder.rmdir()
    target = bk.parent / "planted"
    target.mkdir()
    (target / theirs.name).write_bytes(theirs.read_bytes())
    folder.symlink_to(target)
    data["owners"][0].update(bundle=f"bundles/{folder.name}/{theirs.name}", sha256=_sha(theirs), head=theirs.stem)


TRICKS = [db_path_escape, db_file_outside, db_file_link, bundle_outside, bundle_link, folder_escape,
          bundles_folder_link]


@pytest.mark.parametrize("trick", TRICKS, ids=[t.__name__ for t in TRICKS])
def test_a_hostile_manifest_changes_nothing_outside_the_data_root_and_reads_nothing_from_outside(backup, trick):
    tmp = backup.parent
    path, data = _manifest(backup)
    trick(backup, data)
    data.pop("signature")  # the attacker cannot sign: an unsigned manifest, checksums of their choice
    path.write_text(json.dumps(data))
    before = _tree(tmp, tmp / "fresh")
    try:
        report = restore_backup(backup, tmp / "fresh", trust_unsigned=True)  # the operator trusting it, even
    except (InvalidValue, ValueError) as exc:
        report = exc
    assert _tree(tmp, tmp / "fresh") == before, report
    assert _contains(tmp / "fresh", OUTSIDE.strip()) == [], report
    assert not (tmp / "escaped.sqlite3").exists() and not (tmp / "escaped-owner").exists()


def test_databases_are_restored_only_from_a_manifest_signed_with_the_hosts_key(backup, tmp_path):
    done = restore_backup(backup, tmp_path / "signed", secret=KEY)
    assert done.signed and done.databases == ["jobs"] and not done.skipped
    assert set(done.heads) == {"user:ann", "user:bob"}
    unsigned = restore_backup(backup, tmp_path / "nokey")  # no key to check it with: the owners, no database
    assert not unsigned.signed and unsigned.databases == [] and set(unsigned.skipped) == {"jobs"}
    assert not (tmp_path / "nokey" / "jobs.sqlite3").exists() and set(unsigned.heads) == {"user:ann", "user:bob"}
    with pytest.raises(InvalidValue, match="signature does not match"):
        restore_backup(backup, tmp_path / "otherkey", secret="another-hosts-secret-0123456789")
    path, data = _manifest(backup)
    data["databases"][0]["sha256"] = "0" * 64  # changed after signing
    path.write_text(json.dumps(data))
    with pytest.raises(InvalidValue, match="signature does not match"):
        restore_backup(backup, tmp_path / "tampered", secret=KEY)
    assert not (tmp_path / "otherkey" / "owners").exists() or not any((tmp_path / "otherkey" / "owners").iterdir())


def test_a_bundle_with_a_malformed_branch_name_is_a_clear_error_of_wikimem_restore(tmp_path):
    host = make_host(tmp_path / "data")
    host.create_owner("user:ann").add("notes", "tea", "likes green tea")
    make_backup(tmp_path / "data", tmp_path / "bk")
    path, data = _manifest(tmp_path / "bk")
    bundle = tmp_path / "bk" / data["owners"][0]["bundle"]
    head = data["owners"][0]["head"].encode()
    raw = bundle.read_bytes()
    bundle.write_bytes(raw.replace(b" refs/heads/main\n", b" refs/heads/main\n" + head + b" refs/heads/a..b\n", 1))
    data["owners"][0]["sha256"] = _sha(bundle)
    path.write_text(json.dumps(data))
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIKIMEM_")}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run([sys.executable, "-m", "wikimem", "restore", str(tmp_path / "bk"), "--data",
                           str(tmp_path / "fresh")], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr  # one line, no traceback
    assert "a..b" in done.stderr and "main and staged/<run>" in done.stderr, done.stderr
    assert not (tmp_path / "fresh" / "owners").exists() or list((tmp_path / "fresh" / "owners").iterdir()) == []
