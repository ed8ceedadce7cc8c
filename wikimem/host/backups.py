"""Backups of a data root with every owner's history, made while the host serves, and restoring them.

Design notes: docs/explanation/erasure.md (``wikimem/host/backups.py``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import sqlite3
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from wikimem.errors import InvalidValue, NotFound
from wikimem.fsio import atomic_write, read_regular

from .backuptrust import copy_checked, manifest_key, sign, verify
from .owner_ids import decode_owner_id, encode_owner_id, validate_owner_id

__all__ = ["make_backup", "restore_backup", "BackupReport", "RestoreReport", "DATABASES", "latest_manifest", "FORMAT",
           "known_backups", "BACKUPS_FILE"]

FORMAT = "wikimem-backup"
VERSION = 1
# The non-derived databases of a data root (name → path inside it). The run index (index/) and each owner's
# history index are derived: they are rebuilt, never backed up.
DATABASES = {"jobs": "jobs.sqlite3", "auth": "auth/state.sqlite3"}
BACKUPS_FILE = "backups.json"  # in the data root: the backup folders made from it (path → last run)
_CHUNK = 1 << 20
_MANIFEST_BYTES = 64 << 20


@dataclass
class BackupReport:
    """What one backup run did."""

    manifest: str
    owners: int = 0
    bundled: int = 0  # owners whose head changed since the last run (a new bundle)
    reused: int = 0  # owners at the head of an existing bundle
    databases: list[str] = field(default_factory=list)
    purged: int = 0  # bundles of erased owners deleted from the backup folder
    scrubbed: int = 0  # database copies from which erased owners' rows were removed
    signed: bool = False  # the manifest carries a signature of the host's key (WIKIMEM_SECRET_KEY)
    bytes_written: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class RestoreReport:
    """What one restore did (``heads``: owner id → the head restored; ``skipped``: databases not restored, and why)."""

    manifest: str
    heads: dict[str, str] = field(default_factory=dict)
    databases: list[str] = field(default_factory=list)
    signed: bool = False
    skipped: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)


def _stamp() -> str:
    return f"{datetime.now(timezone.utc):%Y%m%dT%H%M%S%fZ}-{secrets.token_hex(2)}"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def manifests(dest: Path) -> list[Path]:
    """The manifests of a backup folder, oldest first."""
    folder = Path(dest) / "manifests"
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def latest_manifest(dest: Path | str) -> Path:
    """The newest manifest of a backup folder (:class:`NotFound` when there is none)."""
    found = manifests(Path(dest))
    if not found:
        raise NotFound(f"{dest}: no backup manifest (manifests/*.json)")
    return found[-1]


def _read(path: Path) -> dict:
    try:
        data = json.loads(read_regular(path, limit=_MANIFEST_BYTES) or b"null")
    except ValueError as exc:
        raise InvalidValue(f"{path}: not a {FORMAT} manifest ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InvalidValue(f"{path}: not a {FORMAT} manifest")
    if data.get("version") != VERSION:
        raise InvalidValue(f"{path}: manifest version {data.get('version')!r}, this wikimem reads {VERSION}")
    return data


def _owner_folders(root: Path) -> list[tuple[str, Path]]:
    owners = root / "owners"
    try:
        names = sorted(os.listdir(owners))
    except FileNotFoundError:
        return []
    out = []
    for name in names:
        owner_id = decode_owner_id(name)
        if owner_id is not None and (owners / name / ".git").is_dir():
            out.append((owner_id, owners / name))
    return out


# -- backup ---------------------------------------------------------------------------------------------

def make_backup(root: Path | str, dest: Path | str, *, erased: Callable[[str], bool] | None = None,
           keep: int | None = None, secret: str | None = None) -> BackupReport:
    """Back up the data root ``root`` into the backup folder ``dest`` (made if missing); see the module docstring.

    ``erased(owner_id)`` tells an owner erased since (its bundles are purged from ``dest``, its rows from every
    database copy); ``keep`` keeps only the newest ``keep`` manifests (and the bundles they name); ``secret`` (the
    host's ``WIKIMEM_SECRET_KEY``) signs the manifests, so a restore can trust their databases.
    """
    from wikimem.versioned import branch_head, write_bundle_of

    started = time.monotonic()
    root, dest = Path(root), Path(dest)
    key = manifest_key(secret)
    for sub in ("manifests", "bundles", "databases"):
        (dest / sub).mkdir(parents=True, exist_ok=True)
    stamp = _stamp()
    report = BackupReport(manifest=f"manifests/{stamp}.json")
    previous = {}
    for path in manifests(dest):
        for entry in _read(path).get("owners", []):
            previous[(entry["folder"], entry["head"])] = entry
    entries = []
    for owner_id, folder in _owner_folders(root):
        head = branch_head(folder)
        if head is None:
            continue
        rel = f"bundles/{folder.name}/{head}.bundle"
        known = previous.get((folder.name, head))
        if known is not None and (dest / rel).is_file() and (dest / rel).stat().st_size == known.get("bytes"):
            entries.append({**known, "id": owner_id})
            report.reused += 1
            continue
        tmp = dest / "bundles" / folder.name / f".{secrets.token_hex(4)}.tmp"
        tmp.parent.mkdir(parents=True, exist_ok=True)
        try:
            with open(tmp, "wb") as f:
                refs = write_bundle_of(folder, f)
                f.flush()
                os.fsync(f.fileno())
            # named by the head the bundle holds: a write since the look above moved main, and a restore derives
            # the bundle's name from the manifest's head
            head = refs.get("refs/heads/main", head)
            rel = f"bundles/{folder.name}/{head}.bundle"
            target = dest / rel
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
        size = target.stat().st_size
        entries.append({"id": owner_id, "folder": folder.name, "head": head,
                        "refs": refs, "bundle": rel, "sha256": _sha256(target), "bytes": size})
        report.bundled += 1
        report.bytes_written += size
    report.owners = len(entries)
    databases = []
    for name, rel in DATABASES.items():
        source = root / rel
        if not source.is_file():
            continue
        target = dest / "databases" / stamp / Path(rel).name
        target.parent.mkdir(parents=True, exist_ok=True)
        _copy_sqlite(source, target)
        databases.append({"name": name, "path": rel, "file": str(target.relative_to(dest)),
                          "sha256": _sha256(target), "bytes": target.stat().st_size})
        report.databases.append(name)
        report.bytes_written += target.stat().st_size
    manifest = {"format": FORMAT, "version": VERSION, "created": datetime.now(timezone.utc).isoformat(),
                "owners": entries, "databases": databases,
                "derived_left_out": ["owners/*/.git/wikimem-history.sqlite3", "index/", "cache/", "vector caches"]}
    _write_manifest(dest / report.manifest, manifest, key)
    report.signed = key is not None
    if erased is not None:
        report.purged, report.scrubbed = _purge_erased(dest, erased, key)
    if keep is not None:
        _keep_newest(dest, keep)
    _note_backup(root, dest)
    report.seconds = round(time.monotonic() - started, 3)
    return report


def _write_manifest(path: Path, data: dict, key: bytes | None) -> None:
    """Write a manifest, signed with ``key`` (an unsigned one, without it: a signature it had no longer holds)."""
    data = sign({k: v for k, v in data.items() if k != "signature"}, key)
    atomic_write(path, json.dumps(data, indent=1, ensure_ascii=False).encode("utf-8"))


def _note_backup(root: Path, dest: Path) -> None:
    """Remember in the data root that ``dest`` holds a backup of it (an erasure's receipt names such folders)."""
    known = known_backups(root)
    known[str(dest.resolve())] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    atomic_write(root / BACKUPS_FILE, json.dumps(known, indent=1, ensure_ascii=False).encode("utf-8"))


def known_backups(root: Path | str) -> dict[str, str]:
    """``{backup folder: time of its last run}`` of the backups made from the data root ``root``."""
    try:
        found = json.loads(read_regular(Path(root) / BACKUPS_FILE, limit=1 << 20) or b"{}")
    except (ValueError, OSError):
        return {}
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


def _copy_sqlite(source: Path, target: Path) -> None:
    """A consistent copy of a live SQLite database (WAL included), through SQLite's backup API."""
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    src = sqlite3.connect(str(source), timeout=30)
    try:
        dst = sqlite3.connect(str(tmp))
        try:
            src.backup(dst)
            dst.execute("PRAGMA journal_mode=DELETE")
        finally:
            dst.close()
    finally:
        src.close()
    _fsync_file(tmp)
    os.replace(tmp, target)


def _purge_erased(dest: Path, erased: Callable[[str], bool], key: bytes | None) -> tuple[int, int]:
    """Delete the bundles of erased owners from every manifest of ``dest`` and their rows from every database copy;
    ``(bundles deleted, database copies scrubbed)``."""
    found = [(path, _read(path)) for path in manifests(dest)]
    gone = {e["id"]: e["folder"] for _, data in found for e in data.get("owners", []) if erased(e["id"])}
    if not gone:
        return 0, 0
    scrubbed = 0
    for path, data in found:
        data["owners"] = [e for e in data.get("owners", []) if e["id"] not in gone]
        for db in data.get("databases", []):
            copy = dest / "databases" / path.stem / Path(DATABASES.get(db.get("name"), "")).name
            if db.get("name") in DATABASES and copy.is_file():
                _scrub_copy(copy, db["name"], gone)
                db.update(sha256=_sha256(copy), bytes=copy.stat().st_size)
                scrubbed += 1
        _write_manifest(path, data, key)
    purged = 0
    for folder in gone.values():
        target = dest / "bundles" / folder
        purged += sum(1 for _ in target.glob("*.bundle")) if target.is_dir() else 0
        shutil.rmtree(target, ignore_errors=True)
    return purged, scrubbed


def _scrub_copy(copy: Path, name: str, owners: dict[str, str]) -> None:
    """Remove what names the ``owners`` from a database copy of a backup, as an erasure does in the live one."""
    from .fleet import Database, erase_jobs, erase_rows

    if name == "jobs":
        db = Database(copy, "jobs")
        try:
            for owner_id in owners:
                erase_jobs(db, owner_id, keep="", mask="[erased]")
        finally:
            db.close()
    else:
        for owner_id in owners:
            erase_rows(copy, "hits", "key", owner_id)
    conn = sqlite3.connect(str(copy))
    try:
        conn.execute("PRAGMA journal_mode=DELETE")  # a copy is one file again (its WAL folded in and removed)
    finally:
        conn.close()


def _keep_newest(dest: Path, keep: int) -> None:
    """Only the newest ``keep`` manifests stay, with the bundles and databases they name."""
    if keep < 1:
        raise InvalidValue("keep must be at least 1")
    found = manifests(dest)
    for path in found[:-keep]:
        shutil.rmtree(dest / "databases" / path.stem, ignore_errors=True)
        path.unlink()
    used = {entry["bundle"] for path in manifests(dest) for entry in _read(path).get("owners", [])}
    for bundle in (dest / "bundles").glob("*/*.bundle"):
        if str(bundle.relative_to(dest)) not in used:
            bundle.unlink()


# -- restore --------------------------------------------------------------------------------------------

_HEAD_RE = re.compile(r"[0-9a-f]{40}")
_MANIFEST_RE = re.compile(r"[0-9A-Za-z][0-9A-Za-z._-]{0,200}\.json")


def _manifest_path(src: Path, manifest: str | None) -> Path:
    if manifest is None:
        return latest_manifest(src)
    if not isinstance(manifest, str) or not _MANIFEST_RE.fullmatch(manifest):
        raise InvalidValue(f"{str(manifest)[:80]!r} is not a manifest file name (manifests/<stamp>.json)")
    return src / "manifests" / manifest


def _owner_entry(entry: object, manifest: str) -> dict:
    """An owner of a manifest with every name checked: the folder and the bundle path derived from the id and the
    head, never taken as written (a manifest is untrusted input)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
        raise InvalidValue(f"{manifest}: an owner entry without an id")
    owner_id = validate_owner_id(entry["id"])
    folder = encode_owner_id(owner_id)
    head = entry.get("head")
    if entry.get("folder") != folder or not isinstance(head, str) or not _HEAD_RE.fullmatch(head):
        raise InvalidValue(f"{manifest}: owner {owner_id!r} does not live in folder {entry.get('folder')!r} at a "
                           "commit id")
    bundle = f"bundles/{folder}/{head}.bundle"
    if entry.get("bundle") != bundle:
        raise InvalidValue(f"{manifest}: owner {owner_id!r}'s bundle must be {bundle}, not {entry.get('bundle')!r}")
    return {"id": owner_id, "folder": folder, "head": head, "bundle": bundle, "sha256": entry.get("sha256")}


def _database_entries(data: dict, manifest: str) -> list[dict]:
    """The databases of a manifest: each by its name (where it goes and where its copy is are derived from it)."""
    out = []
    for db in data.get("databases", []):
        name = db.get("name") if isinstance(db, dict) else None
        if name not in DATABASES:
            raise InvalidValue(f"{manifest}: {str(name)[:40]!r} is not a database of a data root "
                               f"({', '.join(DATABASES)})")
        copy = f"databases/{Path(manifest).stem}/{Path(DATABASES[name]).name}"
        out.append({"name": name, "path": DATABASES[name], "file": copy, "sha256": db.get("sha256")})
    return out


def restore_backup(src: Path | str, root: Path | str, *, owner: str | None = None, manifest: str | None = None,
            replace: bool = False, secret: str | None = None, trust_unsigned: bool = False) -> RestoreReport:
    """Restore the backup folder ``src`` into the data root ``root`` (see the module docstring).

    Without ``owner`` the data root must hold no owner yet; with it only that owner is restored (an existing
    one is refused unless ``replace``). ``secret`` (the host's ``WIKIMEM_SECRET_KEY``) checks the manifest's
    signature: a manifest signed with another key, or changed since, is refused whole; an unsigned one restores
    the owners (each bundle checked object by object) but not the databases, unless ``trust_unsigned``.
    """
    from wikimem.versioned import restore_bundle

    started = time.monotonic()
    src, root = Path(src), Path(root)
    path = _manifest_path(src, manifest)
    data = _read(path)
    signed = verify(data, manifest_key(secret), path.name)
    entries = [_owner_entry(e, path.name) for e in data.get("owners", [])]
    if owner is not None:
        validate_owner_id(owner)
        entries = [e for e in entries if e["id"] == owner]
        if not entries:
            raise NotFound(f"owner {owner!r} is not in {path.name}")
    elif _owner_folders(root):
        raise InvalidValue(f"{root} already holds owners: restore onto an empty data root, or one owner (--owner)")
    report = RestoreReport(manifest=path.name, signed=signed)
    owners_dir, staging = root / "owners", root / "staging"
    owners_dir.mkdir(parents=True, exist_ok=True)
    staging.mkdir(parents=True, exist_ok=True)
    for entry in entries:
        if (owners_dir / entry["folder"] / ".git").is_dir() and not replace:
            raise InvalidValue(f"owner {entry['id']!r} exists in {root}: give replace to put the backup in its place")
    copies = {}
    try:
        for entry in entries:  # every bundle copied out of the backup folder and checked before anything moves
            copies[entry["id"]] = staging / f"restore-{entry['folder']}-{secrets.token_hex(4)}.bundle"
            copy_checked(src, entry["bundle"], copies[entry["id"]], entry["sha256"])
        for entry in entries:
            report.heads[entry["id"]] = _restore_owner(restore_bundle, copies[entry["id"]], entry, owners_dir, staging)
    finally:
        for copy in copies.values():
            copy.unlink(missing_ok=True)
    if owner is None:
        for db in _database_entries(data, path.name):
            if not signed and not trust_unsigned:
                report.skipped[db["name"]] = ("the manifest is not signed with this host's key (WIKIMEM_SECRET_KEY): "
                                              "a database makes the host act, so it is restored only from a signed "
                                              "backup (or with --trust-unsigned)")
                continue
            _restore_database(src, db, root)
            report.databases.append(db["name"])
    report.seconds = round(time.monotonic() - started, 3)
    return report


def _restore_owner(restore_bundle: Callable, bundle: Path, entry: dict, owners_dir: Path, staging: Path) -> str:
    """One owner folder made from its (checked) bundle in ``staging``, then renamed into place; its head."""
    target = owners_dir / entry["folder"]
    tmp = staging / f"restore-{entry['folder']}-{secrets.token_hex(4)}"
    try:
        head = restore_bundle(bundle, tmp)
        if head != entry["head"]:
            raise InvalidValue(f"{entry['bundle']}: main is {head}, the manifest says {entry['head']}")
        if target.exists():
            trash = staging / f"replaced-{entry['folder']}-{secrets.token_hex(4)}"
            os.rename(target, trash)
            shutil.rmtree(trash, ignore_errors=True)
        os.rename(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return head


def _restore_database(src: Path, db: dict, root: Path) -> None:
    """A database copy put in its place in the data root: copied (checked) next to it, opened as SQLite, renamed."""
    target = root / db["path"]
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    try:
        copy_checked(src, db["file"], tmp, db["sha256"])
        conn = sqlite3.connect(f"file:{tmp}?mode=ro", uri=True)
        try:
            ok = conn.execute("PRAGMA quick_check").fetchone()
        except sqlite3.DatabaseError as exc:
            raise InvalidValue(f"{db['file']}: not a SQLite database ({exc})") from None
        finally:
            conn.close()
        if not ok or ok[0] != "ok":
            raise InvalidValue(f"{db['file']}: a damaged SQLite database ({ok})")
        for suffix in ("-wal", "-shm"):  # of an empty database a host made before (no owner, so no history)
            Path(str(target) + suffix).unlink(missing_ok=True)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
