"""One person, portable: a person's folder — every layer, its whole history, its settings, its staged runs — as one
file (a git bundle: ``git clone person.bundle`` reads it), and that file made a person again on another host.

The file is untrusted input like a git remote: :func:`~wikimem.versioned.restore_bundle` checks every commit
of it with the checks of any fetch (``check_incoming``) and writes the files through the folder's door, into a
staging folder; only then is the folder put in place (:meth:`~wikimem.host.owners.Owners.install`), with the
same heads the exporting host had. An existing person is never overwritten unless ``replace`` is asked for.
The file's name is the owner's folder name (its id, encoded): ``import_person`` reads the id from it when
none is given.
"""

from __future__ import annotations

import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from wikimem.errors import BadImport, Conflict, TooLarge
from wikimem.limits import MAX_PERSON_BYTES

from ..owner_ids import decode_owner_id, validate_owner_id

if TYPE_CHECKING:
    from ..owners import Owners

__all__ = ["PersonImported", "import_person", "received", "owner_of_file", "BUNDLE_SUFFIX"]

BUNDLE_SUFFIX = ".bundle"
_CHUNK = 1 << 20


@dataclass
class PersonImported:
    """A person made from a portable file: its id, the heads of its branches, its layers, whether an existing
    person was replaced, and the characters whose layers it has that this host has not registered."""

    owner: str
    head: str
    refs: dict[str, str]
    layers: list[str]
    replaced: bool
    unregistered: list[str] = field(default_factory=list)
    pushed: bool | None = None  # with a remote: whether the person reached it now

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@contextmanager
def received(stream: BinaryIO, staging: Path) -> Iterator[Path]:
    """A stream (an upload) copied into a file of ``staging``, at most :data:`~wikimem.limits.MAX_PERSON_BYTES`
    (TooLarge past it); the file goes when the block ends."""
    staging.mkdir(parents=True, exist_ok=True)
    path = staging / f"upload-{secrets.token_hex(6)}{BUNDLE_SUFFIX}"
    try:
        size = 0
        with open(path, "xb") as out:
            while chunk := stream.read(_CHUNK):
                size += len(chunk)
                if size > MAX_PERSON_BYTES:
                    raise TooLarge(f"the person's file is over {MAX_PERSON_BYTES:,} bytes")
                out.write(chunk)
        yield path
    finally:
        path.unlink(missing_ok=True)


def owner_of_file(name: str) -> str:
    """The owner id a portable file's name gives (``user_3aann.bundle`` → ``user:ann``); BadImport otherwise."""
    stem = Path(name).name
    stem = stem[:-len(BUNDLE_SUFFIX)] if stem.endswith(BUNDLE_SUFFIX) else stem
    found = decode_owner_id(stem)
    if found is None:
        raise BadImport(f"the file name {Path(name).name[:80]!r} names no owner: give the owner id to import it as")
    return found


def import_person(owners: Owners, owner_id: str, source: Path, *, replace: bool = False,
                  registered: Any = None) -> PersonImported:
    """Make ``owner_id`` from the portable file ``source`` (see the module docstring). Conflict when the person
    exists and ``replace`` is not given; BadImport when the file is not a whole, valid person;
    ``registered(character)`` tells whether a character is registered here."""
    from wikimem.versioned import BundleError, VersionedStore, bundle_refs, restore_bundle

    owner_id = validate_owner_id(owner_id)
    size = source.stat().st_size
    if size > MAX_PERSON_BYTES:
        raise TooLarge(f"the person's file is {size:,} bytes; at most {MAX_PERSON_BYTES:,} are imported")
    if owners.exists(owner_id) and not replace:
        raise Conflict(f"{owner_id} exists on this host: nothing was imported. Give replace to put the imported "
                       "person in its place (its memory and history here are replaced), or import it under "
                       "another id")
    owners.staging_dir.mkdir(parents=True, exist_ok=True)
    tmp = owners.staging_dir / f"import-{secrets.token_hex(6)}"
    try:
        try:
            refs = bundle_refs(source)
            head = restore_bundle(source, tmp)
        except (BundleError, ValueError, OSError) as exc:
            raise BadImport(f"not a person's file this host can import: {exc}") from None
        vstore = VersionedStore(tmp)
        try:
            layers = vstore.layers()
        finally:
            vstore.close()
        person, replaced, pushed = owners.install(owner_id, tmp, replace=replace)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    heads = {k: v for k, v in refs.items() if k.startswith("refs/heads/")}
    missing = [c for c in layers if registered is not None and not registered(c)]
    return PersonImported(person.id, head, heads, layers, replaced, missing, pushed)
