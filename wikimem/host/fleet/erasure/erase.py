"""Erasing an owner everywhere, and forgetting one of its items with its history, as durable jobs.

Design notes: docs/explanation/erasure.md (``wikimem/host/fleet/erasure/erase.py``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wikimem.errors import InvalidValue, NotFound, RemoteMoved, RemoteUnavailable, StoreBusy
from wikimem.host.owner_ids import Within, covers, encode_owner_id, scope_text, validate_owner_id, within_json
from wikimem.naming import validate_character_id

from ..jobtypes import RetryLater, Step
from .register import DEFAULT_RECEIPT_RETENTION, ErasureRegister, erase_jobs, erase_rows, redact_job, scrub_jobs, vacuum

if TYPE_CHECKING:
    from wikimem.host.owners import Owners

    from ..runner import HostJobs

__all__ = ["Erasure", "ERASE", "FORGET", "parse_target", "copy_time"]

log = logging.getLogger(__name__)

ERASE = "erase-owner"
FORGET = "forget"
_AUTH_STATE = Path("auth") / "state.sqlite3"


def _iso(t: float | None) -> str | None:
    return None if t is None else datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="seconds")


def parse_target(data: dict[str, Any]) -> dict[str, Any]:
    """A forget target from a request: ``{file, name}`` (a wiki item) or ``{date, time, index?}`` (a diary entry),
    with ``character`` in that character's layer."""
    layer = data.get("character")
    found = _parse_target(data)
    return {**found, "character": validate_character_id(layer)} if layer is not None else found


def _parse_target(data: dict[str, Any]) -> dict[str, Any]:
    if data.get("file") is not None or data.get("name") is not None:
        if data.get("date") is not None or data.get("time") is not None:
            raise InvalidValue("forget: give file and name (an item), or date and time (a diary entry), not both")
        if not isinstance(data.get("file"), str) or not isinstance(data.get("name"), str):
            raise InvalidValue("forget: an item needs file and name")
        return {"kind": "wiki", "file": data["file"], "name": data["name"]}
    if not isinstance(data.get("date"), str) or not isinstance(data.get("time"), str):
        raise InvalidValue("forget: give file and name (an item), or date and time (a diary entry)")
    index = data.get("index")
    if index is not None and (isinstance(index, bool) or not isinstance(index, int) or index < 0):
        raise InvalidValue("forget: index must be a non-negative integer")
    return {"kind": "diary", "date": data["date"], "time": data["time"], "index": index}


def _described(target: dict[str, Any]) -> dict[str, Any]:
    """What a job and a receipt may keep of a target: the file (or day and minute), never an item's name."""
    layer = {"character": target["character"]} if target.get("character") else {}
    if target["kind"] == "wiki":
        return {"kind": "wiki", "file": target["file"], **layer}
    return {"kind": "diary", "date": target["date"], "time": target["time"], **layer}


class Erasure:
    """Erase owners and forget items (see the module docstring); built by the host with what it needs."""

    def __init__(self, root: Path, owners: Owners, jobs: HostJobs, *, run_index: Any, replication: Any,
                 retention: float | None = None, staged_index: Any = None,
                 backups: Callable[[], dict[str, str]] | None = None):
        self.root = Path(root)
        self._backups = backups  # the backup folders made from the data root ({folder: last run}; host/backups.py)
        self.staged_index = staged_index  # runs on probation: the staged-run index (fleet/staged.py)
        self.owners = owners
        self.jobs = jobs
        self.run_index = run_index
        self.replication = replication
        self._retention = DEFAULT_RECEIPT_RETENTION if retention is None else float(retention)
        self._register: ErasureRegister | None = None

    @property
    def register(self) -> ErasureRegister:
        """The erasure register, in the jobs database (a cluster's shared one: every host sees it)."""
        if self._register is None:
            self._register = ErasureRegister(self.jobs.store.db, retention=self._retention)
        return self._register

    # -- asking ------------------------------------------------------------------------

    def digest(self, owner_id: str) -> str:
        """The keyed digest an owner's erasure is recorded under."""
        return self.register.digest(validate_owner_id(owner_id))

    def erased(self, owner_id: str, since: float | None = None) -> bool:
        """Whether an erasure of ``owner_id`` started (after ``since``)."""
        return self.register.erased(owner_id, since)

    def erased_copy(self, owner: Any) -> bool:
        """Whether ``owner``'s erasure started after this host's copy of it was made (the copy must go)."""
        return self.erased(owner.id, copy_time(owner.root))

    def receipt(self, owner_id: str) -> dict[str, Any] | None:
        """The receipt of the owner's erasure (None: never erased, or not finished)."""
        return self.register.receipt(self.digest(owner_id))

    # -- submitting --------------------------------------------------------------------------

    def submit_erase(self, owner_id: str, *, actor: str = "operator", within: Within = ""):
        """Erase ``owner_id`` everywhere, in the background: ``(job, created)``. Asking again is the same job
        (and the same receipt), until the owner is made again under its id: erasing that copy is a new one."""
        owner_id = validate_owner_id(owner_id)
        digest = self.register.digest(owner_id)
        copy = self.register.begin(digest, ERASE, actor, copy_time(self.root / "owners" / encode_owner_id(owner_id)))
        params = {"erasure": digest, "actor": actor, "within": within_json(within)}
        job, created = self.jobs.store.submit(ERASE, [{**params, "owner": owner_id}], params=params,
                                              key=f"{ERASE}\n{digest}\n{copy:.6f}", request=[ERASE, digest, copy],
                                              tenant=scope_text(within))
        self.jobs.wake()
        return job, created

    def submit_forget(self, owner_id: str, target: dict[str, Any], *, actor: str = "operator", within: Within = ""):
        """Forget one item or diary entry of ``owner_id`` with its history, in the background: ``(job,
        created)``; the same target is the same job while it is kept."""
        owner_id = validate_owner_id(owner_id)
        target = parse_target(target)
        named = json.dumps([owner_id, target], sort_keys=True)
        digest = "fg_" + hashlib.sha256(self.register.digest(named).encode()).hexdigest()[:32]
        params = {"owner": owner_id, "forget": digest, "target": _described(target), "actor": actor,
                  "within": within_json(within)}
        job, created = self.jobs.store.submit(FORGET, [{**params, "target": target}], params=params,
                                              key=f"{FORGET}\n{digest}", request=[FORGET, digest],
                                              tenant=scope_text(within))
        self.jobs.wake()
        return job, created

    def job(self, job_id: str, *, within: Within = "") -> Any:
        """An erase or forget job a caller limited to owner prefix ``within`` may see (:class:`NotFound` else)."""
        found = self.jobs.store.get(job_id)
        owner = found.params.get("owner")
        scope = owner if isinstance(owner, str) else found.params.get("within", "")
        if found.kind not in (ERASE, FORGET) or not covers(within, scope if isinstance(scope, list) else str(scope)):
            raise NotFound(f"no erasure job {job_id!r}")
        return found

    # -- erase ------------------------------------------------------------------------------

    def run_erase(self, step: Step) -> dict[str, Any]:
        """The handler of an erase step (see the module docstring)."""
        params = step.params
        digest = params["erasure"]
        if "owner" not in params:  # reduced to its digest: the run was over, only the "done" mark was missing
            return self.register.receipt(digest) or {"erasure": digest, "kind": ERASE}
        owner_id = params["owner"]
        folder = encode_owner_id(owner_id)
        self.register.begin(digest, ERASE, params.get("actor"))  # (submitted before: nothing changes)
        self._place(digest, "owner repository", lambda: self._erase_local(owner_id, folder))
        self._place(digest, "remote", lambda: self._erase_remote(folder, owner_id, digest))
        self._place(digest, "run index", lambda: self._erase_run_index(owner_id))
        self._place(digest, "staged-run index", lambda: self._erase_staged_index(owner_id))
        self._place(digest, "jobs", lambda: self._erase_jobs(owner_id, step.job, digest))
        self._place(digest, "auth state", lambda: self._erase_auth(owner_id))
        self._place(digest, "backups", self._in_backups)
        self._place(digest, "exports", lambda: self._exported(digest))
        self._place(digest, "processes", lambda: {
            "state": "each process of this host drops what it cached of the owner on its next lookup; another "
                     "host drops its copy when it finds the tombstone or the erasure in the register"})
        receipt = self.register.finish(digest, self._receipt(digest, ERASE, params.get("actor")))
        redact_job(self.jobs.store.db, step.job, {k: params[k] for k in ("erasure", "actor", "within") if k in params})
        return receipt

    def _place(self, digest: str, place: str, act: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        if any(p.get("place") == place for p in self.register.places(digest)):
            return {}
        try:
            done = act()
        except (RemoteUnavailable, RemoteMoved, StoreBusy) as exc:
            raise RetryLater(f"{place}: {exc}", delay=2.0) from None
        return self.register.note(digest, {"place": place, "at": _iso(time.time()), **done})

    def _erase_local(self, owner_id: str, folder: str) -> dict[str, Any]:
        self.owners.drop_if_here(owner_id)
        for parent in (self.root / "owners", self.root / "cache"):
            shutil.rmtree(parent / folder, ignore_errors=True)
        staging = self.root / "staging"
        for entry in staging.iterdir() if staging.is_dir() else ():
            if f"-{folder}-" in entry.name:
                shutil.rmtree(entry, ignore_errors=True)
        return {"state": "removed: the repository with its history, its history index, vector caches and cache "
                         "folder"}

    def _on_remote(self, folder: str, act: Callable[[Any, Any], dict[str, Any]]) -> dict[str, Any]:
        """``act(remote, replication)`` on the owner's remote: what it did, ``where`` (none without a remote)."""
        replication = self.replication
        if replication is None:
            return {"state": "no remote configured"}
        return {"where": replication.shown(), **act(replication.remote(folder), replication)}

    def _erase_remote(self, folder: str, owner_id: str, digest: str) -> dict[str, Any]:
        from wikimem.versioned import bury

        def erase(remote, replication) -> dict[str, Any]:
            # First the marker (a keyed digest, no id): a host holding a copy, without the shared register, then
            # tells the deleted repository from an outage and drops its copy.
            marked = replication.mark_erased(owner_id, self.register.started(digest) or time.time(),
                                             self.root / "staging")
            marker = ({"marker": "left: a repository named by a keyed digest of the id, holding the erasure's time"}
                      if marked else {"marker": "none (the server cannot create one): a host holding a copy drops it "
                                                "from the tombstone, or from the register it shares"})
            # absent: never replicated, or deleted by a run of this job that was cut short
            if (bury(remote, self.root / "staging") == "absent" or remote.delete()
                    or replication.run_hook("erase", remote.url)):
                return {"state": "deleted", **marker}
            return {"state": "emptied: main replaced by the erasure tombstone (no text, no id)",
                    "remains": "delete the owner's repository on the git server (its old objects stay there until "
                               "it is deleted or garbage-collected: git gc --prune=now)", **marker}

        return self._on_remote(folder, erase)

    def _erase_run_index(self, owner_id: str) -> dict[str, Any]:
        self.run_index.forget(owner_id)
        vacuum(self.run_index.db, ("runs", "owners"))
        return {"state": "rows removed"}

    def _erase_staged_index(self, owner_id: str) -> dict[str, Any]:
        if self.staged_index is None:
            return {"state": "none kept"}
        self.staged_index.forget(owner_id)
        vacuum(self.staged_index.db, ("staged_runs",))
        return {"state": "rows removed"}

    def _erase_jobs(self, owner_id: str, keep: str, digest: str) -> dict[str, Any]:
        erase_jobs(self.jobs.store.db, owner_id, keep=keep, mask=digest)
        return {"state": "its jobs removed (turns, results); its id replaced by the erasure digest in other jobs"}

    def _erase_auth(self, owner_id: str) -> dict[str, Any]:
        erase_rows(self.root / _AUTH_STATE, "hits", "key", owner_id)
        return {"state": "counters naming it removed"}

    def _in_backups(self) -> dict[str, Any]:
        found = sorted(self._backups()) if self._backups is not None else []
        if not found:
            return {"state": "no backup was made from this data root"}
        return {"where": ", ".join(found), "state": "backups made before the erasure hold the owner",
                "remains": "run `wikimem backup` into each of these folders: the run deletes the owner's bundles and "
                           "removes its rows from every database copy there"}

    def _exported(self, digest: str) -> dict[str, Any]:
        """What was exported of the owner before (recorded by ``Host.export_owner``): each copy that left the host
        (when, by whom, as what) is named in the receipt; the records go."""
        made = self.register.exports(digest)
        self.register.forget_exports(digest)
        if not made:
            return {"state": "no export of the owner was recorded"}
        return {"state": f"{len(made)} export(s) of the owner were made before the erasure", "exports": made,
                "remains": "whoever holds these exported files holds the owner's memory: delete them"}

    def note_export(self, owner_id: str, fmt: str, actor: str | None, head: str | None) -> None:
        """Record an export of ``owner_id`` (named by its erasure digest, never its id) for a later receipt."""
        self.register.note_export(self.digest(owner_id), fmt, actor, head)

    def _receipt(self, digest: str, kind: str, actor: str | None) -> dict[str, Any]:
        places = self.register.places(digest)
        started = self.register.started(digest)
        return {("erasure" if kind == ERASE else "forget"): digest, "kind": kind, "by": actor, "started": _iso(started),
                "finished": _iso(time.time()), "places": places,
                "remains": [f"{p['place']}: {p['remains']}" for p in places if p.get("remains")],
                "owner": "not recorded: the erasure is named by a keyed digest of the owner id"}

    # -- forget ----------------------------------------------------------------------------------

    def run_forget(self, step: Step) -> dict[str, Any]:
        """The handler of a forget step (see the module docstring)."""
        params = step.params
        digest = params["forget"]
        target = params["target"]
        if target.get("kind") == "wiki" and "name" not in target:  # reduced: the run was over
            return self.register.receipt(digest) or {"forget": digest, "kind": FORGET}
        owner_id, actor = params["owner"], params.get("actor") or "operator"
        owner = self.owners.owner(owner_id)
        self.register.begin(digest, FORGET, actor)
        where = ({"file": target["file"], "name": target["name"]} if target["kind"] == "wiki" else
                 {"date": target["date"], "time_": target["time"], "index": target.get("index")})
        where["layer"] = target.get("character")

        def before(texts: set[str], runs: set[str]) -> None:
            from wikimem.versioned import PLACEHOLDER

            scrub_jobs(self.jobs.store.db, owner_id, texts, runs, placeholder=PLACEHOLDER)

        try:
            done = owner.forget(target["kind"], actor=actor, key=step.key, before=before, **where)
        except (RemoteUnavailable, RemoteMoved, StoreBusy) as exc:
            raise RetryLater(f"forget: {exc}", delay=2.0) from None
        self._place(digest, "history", lambda: {
            "state": "rewritten without it" if done.found else "it was in no commit",
            "commits_rewritten": done.rewritten, "versions": done.versions, "marker": done.marker,
            "head": done.head, "remote": done.remote, "local_objects_pruned": (done.pruned or {}).get("removed")})
        self._place(digest, "jobs", lambda: {"state": "its texts masked in the owner's jobs; the raw turns of the "
                                                      "runs that wrote it dropped"})
        try:
            self._place(digest, "indexes", lambda: self._reindex(owner))
            self._place(digest, "remote objects", lambda: self._prune_remote(owner.root.name))
        except Exception:
            if not owner.exists():  # erased meanwhile (an erasure outranks a forget): say so, not "internal"
                raise NotFound(f"owner {owner_id!r} was erased while its item was being forgotten") from None
            raise
        receipt = self._receipt(digest, FORGET, actor)
        receipt["owner"] = owner_id
        receipt["target"] = _described(target)
        receipt = self.register.finish(digest, receipt)
        kept = {**params, "target": {**_described(target), **({"name_digest": digest} if target["kind"] == "wiki"
                                                              else {})}}
        redact_job(self.jobs.store.db, step.job, kept)
        return receipt

    def _reindex(self, owner) -> dict[str, Any]:
        self.run_index.reindex(owner)
        return {"state": "history index rebuilt from the rewritten history; run index rows of the owner made "
                         "again; vector caches deleted (embedded again from the memory)"}

    def _prune_remote(self, folder: str) -> dict[str, Any]:
        from wikimem.versioned import prune_remote

        def prune(remote, replication) -> dict[str, Any]:
            if prune_remote(remote) or replication.run_hook("prune", remote.url):
                return {"state": "pruned: no unreachable object left"}
            return {"state": "main replaced; the old objects are unreachable there",
                    "remains": "run git gc --prune=now (after git reflog expire --expire=now --all) on the owner's "
                               "repository on the git server: until then its old objects stay on its disk"}

        return self._on_remote(folder, prune)

    # -- housekeeping ---------------------------------------------------------------------------

    def maintain(self) -> int:
        """Receipts older than their retention deleted (the job runner's housekeeping)."""
        gone = self.register.prune()
        if gone:
            vacuum(self.jobs.store.db, ("erasures",))
        return gone

    def drop_erased(self, owner_id: str) -> None:
        """Drop this host's copy of an owner erased on another host, and — when this host's databases are its own
        (no shared PostgreSQL: the erasing host could not reach them) — every row they hold of it, as the erasure
        does: run index, staged-run index, jobs, auth state, each rewritten whole."""
        self.owners.drop_if_here(owner_id)
        if self.jobs.store.db.postgres:
            return  # a shared database: the erasing host removed it there
        self._erase_run_index(owner_id)
        if self.staged_index is not None and not self.staged_index.shared:
            self._erase_staged_index(owner_id)
        erase_jobs(self.jobs.store.db, owner_id, keep="", mask=self.digest(owner_id))
        self._erase_auth(owner_id)

    def sweep(self, owners: Iterable[tuple[str, Path]] | None = None) -> list[str]:
        """Drop this host's copies of owners (``(id, folder)``, default every one held here) erased on another
        host (a cluster's shared register names them, after the copy was made); the ids dropped. Run by the job
        runner's housekeeping when the jobs database is shared: a copy nobody looks up goes too."""
        if not self.jobs.store.db.postgres:
            return []  # one data root: the erase job removed the copy itself
        owners = self.owners.folders() if owners is None else owners
        dropped = []
        for owner_id, folder in owners:
            if self.register.erased(owner_id, copy_time(folder)) and self.owners.drop_if_here(owner_id):
                self.run_index.forget(owner_id)
                dropped.append(owner_id)
        return dropped


def copy_time(folder: Path) -> float | None:
    """When this host's copy of an owner was made (its ``.git/HEAD``, written once), or None."""
    try:
        return os.stat(Path(folder) / ".git" / "HEAD").st_mtime
    except FileNotFoundError:
        return None
