"""What a restore trusts of a backup folder: the manifest's signature, and files read out of the folder safely.

A backup folder is untrusted input, like a git remote: whoever can write it
can write its manifest too, so a checksum in the manifest only catches
damage, never an attacker. What is trusted:

- **signed manifests** — :func:`sign` adds an HMAC-SHA256 of the manifest
  under a key derived from the host's ``WIKIMEM_SECRET_KEY`` (:func:`manifest_key`);
  :func:`verify` refuses a manifest whose signature does not match (changed
  since, or signed with another key). Only a signed manifest's databases are
  restored: a jobs queue or an auth state makes a host act;
- **bundles** — checked object by object whatever the signature says (as a
  fetch from a remote is), and written through the folder's door;
- **names** — never: every path is derived from a validated id (the caller's
  job), and :func:`copy_checked` reads a file only as a plain relative path
  under the backup folder, no component a symbolic link, the last a regular
  file, hashed as it is copied (no gap between the check and the use).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
from pathlib import Path

from wikimem.errors import DamagedFolder, InvalidValue
from wikimem.fsio import open_folder, open_regular, write_all

__all__ = ["manifest_key", "sign", "verify", "copy_checked"]

_SCHEME = "hmac-sha256:"
_PART_RE = re.compile(r"[0-9A-Za-z_@~-][0-9A-Za-z._@~-]{0,254}")
_CHUNK = 1 << 20


def manifest_key(secret: str | None) -> bytes | None:
    """The key manifests are signed with, derived from the host's secret key (None: no key, manifests unsigned)."""
    if not secret:
        return None
    return hashlib.sha256(b"wikimem backup manifest\n" + str(secret).encode("utf-8")).digest()


def _mac(data: dict, key: bytes) -> str:
    body = {k: v for k, v in data.items() if k != "signature"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return _SCHEME + hmac.new(key, text, hashlib.sha256).hexdigest()


def sign(data: dict, key: bytes | None) -> dict:
    """``data`` with its signature (unchanged without a key)."""
    return data if key is None else {**data, "signature": _mac(data, key)}


def verify(data: dict, key: bytes | None, shown: str) -> bool:
    """Whether the manifest ``data`` is signed with ``key``: False when it is unsigned or there is no key to check
    it with; :class:`InvalidValue` when its signature does not match."""
    found = data.get("signature")
    if found is None or key is None:
        return False
    if not isinstance(found, str) or not hmac.compare_digest(found, _mac(data, key)):
        raise InvalidValue(f"{shown}: its signature does not match this host's key (WIKIMEM_SECRET_KEY): changed "
                           "since it was written, or made by a host with another key; nothing was restored")
    return True


def copy_checked(src: Path, rel: str, target: Path, sha256: object) -> None:
    """Copy the file ``rel`` of the backup folder ``src`` to the new file ``target``, its SHA-256 equal to
    ``sha256``; :class:`InvalidValue` (and no ``target``) otherwise."""
    parts = rel.split("/")
    if not isinstance(sha256, str) or not all(_PART_RE.fullmatch(p) for p in parts):
        raise InvalidValue(f"{rel!r}: not a file a backup holds (or no checksum for it)")
    fds: list[int] = []
    try:
        try:
            folder = open_folder(src, shown=str(src))
            if folder is None:
                raise FileNotFoundError(str(src))
            fds.append(folder)
            for part in parts[:-1]:
                inner = open_folder(part, dir_fd=fds[-1], shown=rel)
                if inner is None:
                    raise FileNotFoundError(rel)
                fds.append(inner)
            fds.append(open_regular(parts[-1], dir_fd=fds[-1], shown=rel))
        except (DamagedFolder, FileNotFoundError, NotADirectoryError) as exc:
            raise InvalidValue(f"{rel}: missing from the backup, or not a plain file in it ({exc})") from None
        _copy(fds[-1], target, rel, sha256)
    finally:
        for fd in fds:
            os.close(fd)


def _copy(fd: int, target: Path, rel: str, sha256: str) -> None:
    digest = hashlib.sha256()
    out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        try:
            while chunk := os.read(fd, _CHUNK):
                digest.update(chunk)
                write_all(out, chunk)
            os.fsync(out)
        finally:
            os.close(out)
        if not hmac.compare_digest(digest.hexdigest(), sha256):
            raise InvalidValue(f"{rel}: its checksum differs from the manifest's")
    except BaseException:
        target.unlink(missing_ok=True)
        raise
