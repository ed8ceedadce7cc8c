"""Export of an owner's markdown as a zip or tar archive (in memory)."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

from wikimem.format import layer_dirs
from wikimem.store import Door

__all__ = ["FORMATS", "archive_markdown"]

FORMATS = {"zip": "application/zip", "tar": "application/x-tar"}  # format → media type


def archive_markdown(root: Path, top: str, fmt: str = "zip",
                     layers: tuple[str | None, ...] | None = (None,)) -> bytes:
    """An archive of ``root``'s ``wiki/`` and ``diary/`` markdown under the folder ``top`` (of ``layers``: None in it
    is the shared layer, a character id its ``characters/<id>/``; ``None``: every layer).

    Files are read through the folder's door: a link, a FIFO or an oversized file in it is
    :class:`~wikimem.errors.DamagedFolder`, never followed into the archive.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown archive format {fmt!r}: use one of {', '.join(FORMATS)}")
    buf = io.BytesIO()
    door = Door(root)
    files = []
    chosen = [*door.layers(), None] if layers is None else layers
    for folder in (d for layer in chosen for d in layer_dirs(layer)):
        for name, stamp in sorted(door.stamps(folder).items()):
            # Read first: a file replaced while the archive is built must not tear it.
            data = door.read(f"{folder}/{name}")
            if data is not None:
                files.append((f"{top}/{folder}/{name}", data, stamp[1] / 1e9))
    if fmt == "zip":
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for arc, data, mtime in files:
                info = zipfile.ZipInfo(arc, date_time=_zip_time(mtime))
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, data)
    else:
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
            for arc, data, mtime in files:
                member = tarfile.TarInfo(arc)
                member.size, member.mtime, member.mode = len(data), int(mtime), 0o644
                tf.addfile(member, io.BytesIO(data))
    return buf.getvalue()


def _zip_time(mtime: float) -> tuple[int, int, int, int, int, int]:
    import time

    t = time.gmtime(max(mtime, 315532800))  # zip cannot store times before 1980
    return (t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec)
