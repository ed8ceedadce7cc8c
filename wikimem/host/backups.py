"""Backups of a data root with every owner's history, made while the host serves, and restoring them.

Design notes: docs/explanation/erasure.md (``wikimem/host/backups.py``).
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import sqlite3
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from wikimem.errors import InvalidValue, NotFound
from wikimem.fsio import atomic_write

from .owner_ids import decode_owner_id, encode_owner_id, validate_owner_id

__all__ = ["make_backup", "restore_backup", "BackupReport", "RestoreReport", "DATABASES", "latest_manifest", "FORMAT"]

FORMAT = "wikimem-backup"
VERSION = 1
# The non-derived databases of a data root (name → path inside it). The run index (index/) and each owner's
# history index are derived: they are rebuilt, never backed up.
DATABASES = {"jobs": "jobs.sqlite3", "auth": "auth/state.sqlite3"}
_CHUNK = 1 << 20


@dataclass
class BackupReport:
    """What one backup run did."""

    manifest: str
    owners: int = 0
    bundled: int = 0  # owners whose head changed since the last run (a new bundle)
    reused: int = 0  # owners at the head of an existing bundle
    databases: list[str] = field(default_factory=list)
    purged: int = 0  # bundles of erased owners deleted from the backup folder
    bytes_written: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class RestoreReport:
    """What one restore did (``heads``: owner id → the head restored)."""

    manifest: str
    heads: dict[str, str] = field(default_factory=dict)
    databases: list[str] = field(default_factory=list)
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
    data = json.loads(path.read_bytes())
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
           keep: int | None = None) -> BackupReport:
    """Back up the data root ``root`` into the backup folder ``dest`` (made if missing); see the module docstring.

    ``erased(owner_id)`` tells an owner erased since (its bundles are purged from ``dest``); ``keep`` keeps
    only the newest ``keep`` manifests (and the bundles they name).
    """
    from wikimem.versioned import branch_head, write_bundle_of

    started = time.monotonic()
    root, dest = Path(root), Path(dest)
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
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
        try:
            with open(tmp, "wb") as f:
                refs = write_bundle_of(folder, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
        size = target.stat().st_size
        entries.append({"id": owner_id, "folder": folder.name, "head": refs.get("refs/heads/main", head),
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
    atomic_write(dest / report.manifest, json.dumps(manifest, indent=1, ensure_ascii=False).encode("utf-8"))
    if erased is not None:
        report.purged = _purge_erased(dest, erased)
    if keep is not None:
        _keep_newest(dest, keep)
    report.seconds = round(time.monotonic() - started, 3)
    return report


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


def _purge_erased(dest: Path, erased: Callable[[str], bool]) -> int:
    """Delete the bundles of erased owners from every manifest of ``dest``; how many bundles."""
    gone: set[str] = set()
    for path in manifests(dest):
        data = _read(path)
        kept = []
        for entry in data.get("owners", []):
            if erased(entry["id"]):
                gone.add(entry["folder"])
            else:
                kept.append(entry)
        if len(kept) != len(data.get("owners", [])):
            data["owners"] = kept
            atomic_write(path, json.dumps(data, indent=1, ensure_ascii=False).encode("utf-8"))
    purged = 0
    for folder in gone:
        target = dest / "bundles" / folder
        purged += sum(1 for _ in target.glob("*.bundle")) if target.is_dir() else 0
        shutil.rmtree(target, ignore_errors=True)
    return purged


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

def restore_backup(src: Path | str, root: Path | str, *, owner: str | None = None, manifest: str | None = None,
            replace: bool = False) -> RestoreReport:
    """Restore the backup folder ``src`` into the data root ``root`` (see the module docstring).

    Without ``owner`` the data root must hold no owner yet; with it only that owner is restored (an existing
    one is refused unless ``replace``). Every bundle's checksum is checked before anything is written.
    """
    from wikimem.versioned import restore_bundle

    started = time.monotonic()
    src, root = Path(src), Path(root)
    path = src / "manifests" / manifest if manifest else latest_manifest(src)
    data = _read(path)
    entries = data.get("owners", [])
    if owner is not None:
        validate_owner_id(owner)
        entries = [e for e in entries if e.get("id") == owner]
        if not entries:
            raise NotFound(f"owner {owner!r} is not in {path.name}")
    elif _owner_folders(root):
        raise InvalidValue(f"{root} already holds owners: restore onto an empty data root, or one owner (--owner)")
    for entry in entries:
        if encode_owner_id(entry["id"]) != entry["folder"]:
            raise InvalidValue(f"{path.name}: owner {entry['id']!r} does not live in folder {entry['folder']!r}")
        bundle = src / entry["bundle"]
        if not bundle.is_file() or _sha256(bundle) != entry["sha256"]:
            raise InvalidValue(f"{entry['bundle']}: missing or its checksum differs from the manifest's")
    report = RestoreReport(manifest=path.name)
    owners_dir, staging = root / "owners", root / "staging"
    owners_dir.mkdir(parents=True, exist_ok=True)
    staging.mkdir(parents=True, exist_ok=True)
    for entry in entries:
        target = owners_dir / entry["folder"]
        if (target / ".git").is_dir() and not replace:
            raise InvalidValue(f"owner {entry['id']!r} exists in {root}: give replace to put the backup in its place")
        tmp = staging / f"restore-{entry['folder']}-{secrets.token_hex(4)}"
        try:
            head = restore_bundle(src / entry["bundle"], tmp)
            if head != entry["head"]:
                raise InvalidValue(f"{entry['bundle']}: main is {head}, the manifest says {entry['head']}")
            if target.exists():
                trash = staging / f"replaced-{entry['folder']}-{secrets.token_hex(4)}"
                os.rename(target, trash)
                shutil.rmtree(trash, ignore_errors=True)
            os.rename(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        report.heads[entry["id"]] = head
    if owner is None:
        for db in data.get("databases", []):
            target = root / db["path"]
            source = src / db["file"]
            if _sha256(source) != db["sha256"]:
                raise InvalidValue(f"{db['file']}: its checksum differs from the manifest's")
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
            shutil.copyfile(source, tmp)
            for suffix in ("-wal", "-shm"):  # of an empty database a host made before (no owner, so no history)
                Path(str(target) + suffix).unlink(missing_ok=True)
            os.replace(tmp, target)
            report.databases.append(db["name"])
    report.seconds = round(time.monotonic() - started, 3)
    return report
