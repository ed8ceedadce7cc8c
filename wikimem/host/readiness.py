"""Whether a host can serve (``/readyz``): its data root's disk, and its remote when it replicates.

:class:`Readiness` is what :meth:`Host.ready <wikimem.host.Host.ready>`
answers: a verdict, one word per check that anyone may see (``disk``:
``ok``, ``full`` or ``read-only``; ``remote``: ``none``, ``reachable`` or
``unreachable``), and :attr:`Readiness.details` — paths, free bytes, the
remote's own message — for operators only (the web layer shows them to
the admin scope).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Readiness", "disk_state", "DEFAULT_MIN_FREE"]

DEFAULT_MIN_FREE = 64 * 1024 * 1024  # bytes


def disk_state(path: Path | str, min_free: int = DEFAULT_MIN_FREE) -> tuple[str, dict[str, Any]]:
    """``("ok" | "full" | "read-only", details)`` of the file system holding ``path``.

    Full: fewer than ``min_free`` bytes (or no inode) left for an unprivileged
    writer — a git commit, a SQLite journal and a temp file need room.
    Read-only: mounted so, or the folder is not writable by this process.
    """
    path = Path(path)
    details: dict[str, Any] = {"path": str(path), "min_free_bytes": int(min_free)}
    try:
        st = os.statvfs(path)
    except OSError as exc:
        details["error"] = str(exc)
        return "read-only", details
    free = st.f_bavail * st.f_frsize
    details["free_bytes"] = free
    if st.f_flag & os.ST_RDONLY or not os.access(path, os.W_OK):
        return "read-only", details
    if free < min_free or (st.f_files and st.f_favail == 0):
        return "full", details
    return "ok", details


@dataclass(frozen=True)
class Readiness:
    """The answer of ``/readyz``: ready or not, each check in one word, and details for operators."""

    disk: str
    remote: str
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def ready(self) -> bool:
        return self.disk == "ok" and self.remote in ("none", "reachable")

    def to_dict(self, *, details: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"ready": self.ready, "remote": self.remote, "disk": self.disk}
        if details:
            out["details"] = self.details
        return out
