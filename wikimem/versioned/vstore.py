"""VersionedStore: a memory folder whose every mutation is one git commit.

It plugs :class:`GitHook` into the library's mutation seam
(:mod:`wikimem.mutation`): the hook's lock is the same ``flock`` on
``<root>/.wikimem.lock`` the plain store takes (so plain and versioned
writers of one folder exclude each other), and its ``committed`` turns the
unit's files into blob → tree → commit objects and moves ``main`` by
compare-and-swap, all inside the critical section of the write.

On entering the lock the hook first commits hand edits (files that differ
from ``HEAD``) as an ``external-edit`` commit, so a write never sweeps
someone's editor change into its own commit.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from dulwich.objects import Blob

from ..errors import Conflict, IdempotencyKeyReused, NotFound, PreconditionFailed
from ..fsio import read_bytes
from ..journal import utc_now
from ..locking import FileLock
from ..models import DiaryItem, RecallItem
from ..mutation import LOCK_NAME, Mutation
from ..store import MemoryStore
from .historydb import HistoryDB, HistoryEntry, HistoryPage, iso
from .itemdiff import ItemChange, path_changes, split_path, unified_patch
from .messages import build_message
from .objects import TRACKED_DIRS, GitRepo
from .plans import Plan, State, finish, plan_restore, plan_revert
from .snapshot import Snapshot

__all__ = ["VersionedStore", "Committed", "Batch", "CommitDiff", "item_etag", "PACK_EVERY"]

# Pack loose objects after this many commits (auto_pack=True).
PACK_EVERY = 1000
_HEX_RE = re.compile(r"[0-9a-fA-F]{4,40}")


def item_etag(item: RecallItem) -> str:
    """A stable tag of an item's content and provenance (for ``If-Match``)."""
    import hashlib

    text = "\0".join(str(v) for v in (item.file, item.name, item.content, item.owner, item.source_conv, item.ts))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:20]


@dataclass
class Committed:
    """What a write returns: its value, the commit it made (None if nothing changed), and whether it was a replay."""

    value: Any
    commit: str | None
    replayed: bool = False


@dataclass
class Batch:
    """The handle of :meth:`VersionedStore.batch`."""

    replay: dict | None = None
    result: Any = None
    commit: str | None = None
    unit: Any = field(default=None, repr=False)  # the writer's unit: its ``info`` goes into the commit


@dataclass
class CommitDiff:
    """A commit (or the span between two) item by item, plus the raw patch."""

    entry: HistoryEntry | None
    changes: list[ItemChange] = field(default_factory=list)
    patch: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def _touches(records: list[dict]) -> list[tuple] | None:
    """Touches of a unit from its journal records, when every record names its item (else None: diff it)."""
    out = []
    for rec in records:
        action = rec.get("action")
        if action in ("add", "update", "remove") and rec.get("file") and rec.get("item"):
            out.append(("wiki", rec["file"], rec["item"], None, None))
        elif action == "diary" and rec.get("date") and rec.get("time"):
            out.append(("diary", None, None, rec["date"], rec["time"]))
        else:
            return None
    return list(dict.fromkeys(out))


class GitHook:
    """The versioned store's side of the mutation seam."""

    def __init__(self, vstore: "VersionedStore", lock: FileLock):
        self._vstore = vstore
        self._lock = lock

    @contextmanager
    def locked(self) -> Iterator[None]:
        with self._lock.hold():
            self._vstore._on_lock()
            yield

    def committed(self, mutations: list[Mutation], info: dict) -> None:
        self._vstore._commit_unit(mutations, info)


class VersionedStore:
    """One memory folder, versioned: ``store`` and ``diary`` as in the library, every write a commit."""

    def __init__(self, root: Path | str, *, auto_pack: bool = True, pack_every: int = PACK_EVERY):
        self.root = Path(root)
        self.auto_pack = auto_pack
        self.pack_every = pack_every
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock = FileLock(self.root / LOCK_NAME)
        if not (self.root / ".git" / "HEAD").exists():
            with self._lock.hold():
                if not (self.root / ".git" / "HEAD").exists():
                    GitRepo.init(self.root)
        self.git = GitRepo(self.root)
        self.db = HistoryDB(self.git)
        self.hook = GitHook(self, self._lock)
        self.store = MemoryStore(self.root, hook=self.hook)
        self.diary = self.store.diary
        self.writer = self.store.writer
        self._stat_cache: dict[str, tuple[tuple, bytes]] = {}
        self._external_commit: str | None = None

    def __repr__(self) -> str:
        return f"VersionedStore({str(self.root)!r})"

    def close(self) -> None:
        self.db.close()
        self.git.close()

    # -- the seam ------------------------------------------------------------

    def _on_lock(self) -> None:
        """First thing under the lock: clear what a killed writer left, commit hand edits."""
        self.git.clear_stale_locks()
        self._external_commit = self._commit_external(actor=None)

    def _commit_unit(self, mutations: list[Mutation], info: dict) -> None:
        paths = list(dict.fromkeys(p for m in mutations for p in m.paths))
        records = [m.record for m in mutations if m.record]
        contents = {p: read_bytes(self.root / p) for p in paths}
        message = build_message(records, info, action=info.get("action"))
        cid = self._commit_files(contents, message, info.get("actor"), touches=_touches(records))
        info["_commit"] = cid
        batch = info.get("_batch")
        key = info.get("idempotency_key")
        if key and batch is not None:
            self.db.set_result(key, cid, batch.result)
        if self.auto_pack and self.db.since_pack() >= self.pack_every:
            self._pack_locked()

    def _commit_files(self, contents: dict[str, bytes | None], message: str, actor: str | None,
                      touches: list[tuple] | None = None) -> str:
        head = self.git.head()
        base_tree = self.git.commit_tree(head)
        tree = self.git.write_tree(base_tree, contents)
        cid = self.git.make_commit(tree, [head] if head else [], message, actor)
        if not self.git.move_ref(head, cid):
            raise RuntimeError(f"{self.root}: branch moved while the owner lock was held")
        shas = {p: (None if data is None else Blob.from_string(data).id) for p, data in contents.items()}
        self.git.update_index(shas)
        for p, sha in shas.items():
            self._remember(p, sha)
        self.db.sync({cid: touches} if touches is not None else None)
        return cid.decode()

    # -- hand edits ------------------------------------------------------------

    def _remember(self, path: str, sha: bytes | None) -> None:
        if sha is None:
            self._stat_cache.pop(path, None)
            return
        try:
            st = os.stat(self.root / path)
        except FileNotFoundError:
            self._stat_cache.pop(path, None)
            return
        self._stat_cache[path] = ((st.st_ino, st.st_mtime_ns, st.st_size), sha)

    def _disk_files(self) -> dict[str, bytes]:
        """``{path: blob sha}`` of the markdown files of ``wiki/`` and ``diary/`` on disk."""
        out: dict[str, bytes] = {}
        for folder in TRACKED_DIRS:
            try:
                names = os.listdir(self.root / folder)
            except (FileNotFoundError, NotADirectoryError):
                continue
            for name in names:
                path = f"{folder}/{name}"
                if name.startswith(".") or split_path(path) is None:
                    continue
                try:
                    st = os.stat(self.root / path)
                except FileNotFoundError:
                    continue
                key = (st.st_ino, st.st_mtime_ns, st.st_size)
                cached = self._stat_cache.get(path)
                if cached is not None and cached[0] == key:
                    out[path] = cached[1]
                    continue
                data = read_bytes(self.root / path)
                if data is None:
                    continue
                sha = Blob.from_string(data).id
                self._stat_cache[path] = (key, sha)
                out[path] = sha
        return out

    def external_changes(self) -> list[str]:
        """Tracked markdown files whose content on disk differs from ``HEAD``."""
        committed = {p: s for p, s in self.git.tracked(self.git.commit_tree(self.git.head())).items()
                     if split_path(p) is not None}
        disk = self._disk_files()
        return sorted(p for p in committed.keys() | disk.keys() if committed.get(p) != disk.get(p))

    def _commit_external(self, actor: str | None) -> str | None:
        paths = self.external_changes()
        if not paths:
            return None
        self.store.invalidate()
        contents = {p: read_bytes(self.root / p) for p in paths}
        lines = [f"external-edit: {len(paths)} file{'s' if len(paths) != 1 else ''} changed outside wikimem", ""]
        lines += [f"- {p}" for p in paths] + ["", "Wikimem-Action: external-edit"]
        if len(paths) == 1:
            kind = split_path(paths[0])
            lines.append(f"Wikimem-{'File' if kind[0] == 'wiki' else 'Date'}: {kind[1]}")
        lines.append(f"Wikimem-Actor: {actor or 'external'}")
        return self._commit_files(contents, "\n".join(lines) + "\n", actor or "external")

    def sync_external(self, actor: str | None = None) -> str | None:
        """Commit hand edits now (every write does this first anyway); the commit id or None."""
        with self.writer._thread_lock, self._lock.hold():
            self.git.clear_stale_locks()
            return self._commit_external(actor)

    # -- writes ----------------------------------------------------------------

    def head(self) -> str:
        head = self.git.head()
        return head.decode() if head else ""

    @contextmanager
    def batch(self, *, run: str | None = None, actor: str | None = None, message: str | None = None,
              source_conv: str | None = None, if_match: str | None = None,
              idempotency_key: str | None = None, action: str | None = None,
              kind: str | None = None, extra: dict | None = None) -> Iterator[Batch]:
        """Everything written inside is one commit (or none, if nothing was written).

        With an ``idempotency_key`` already applied, ``handle.replay`` holds the
        stored result and nothing should be written; ``kind`` names the request
        (``add``, ``diary``, …) so that a key reused for another kind of
        request is refused (:class:`IdempotencyKeyReused`) rather than replayed.
        ``extra`` adds fields to the commit's info (e.g. ``reverts``).
        """
        handle = Batch()
        info = {k: v for k, v in (("run", run), ("actor", actor), ("message", message), ("source_conv", source_conv),
                                  ("idempotency_key", idempotency_key), ("action", action)) if v is not None}
        info.update(extra or {})
        info["_batch"] = handle
        with self.writer.unit(**info) as unit:
            handle.unit = unit
            if idempotency_key is not None:
                found = self.db.idem(idempotency_key)
                if found is not None:
                    handle.replay = dict(found[1] or {}) if isinstance(found[1], dict) else {"result": found[1]}
                    handle.replay.setdefault("commit", found[0])
                    handle.commit = found[0]
                    stored = handle.replay.get("_kind")
                    if kind is not None and stored is not None and stored != kind:
                        raise IdempotencyKeyReused(
                            f"Idempotency-Key {idempotency_key!r} was already used for a {stored} request, "
                            f"not {kind}; use a new key for a new request")
            if if_match is not None and handle.replay is None:
                head = self.head()
                if not head.startswith(if_match.lower()) or len(if_match) < 4:
                    raise PreconditionFailed(f"the memory changed: head is {head[:12]}, not {if_match}", current=head)
            yield handle
            if kind is not None and isinstance(handle.result, dict):
                handle.result["_kind"] = kind
        if handle.replay is None:
            handle.commit = unit.info.get("_commit") if unit.info.get("_batch") is handle else None

    def _check_item(self, file: str, name: str, if_match: str | None) -> None:
        """``if_match`` is the item's etag, or a full commit id that must still be the head."""
        if if_match is None:
            return
        if len(if_match) == 40 and all(c in "0123456789abcdef" for c in if_match.lower()):
            head = self.head()
            if head != if_match.lower():
                raise PreconditionFailed(f"the memory changed: head is {head[:12]}, not {if_match[:12]}",
                                         current=head)
            return
        current = self.store.get(file, name)
        tag = item_etag(current) if current is not None else None
        if tag != if_match:
            raise PreconditionFailed(f"item {file}/{name} changed (etag {tag or 'none'}, not {if_match})", current=tag)

    def add(self, file: str, name: str, content: str, *, owner: str | None = None, ts: str | None = None,
            source_conv: str | None = None, run: str | None = None, actor: str | None = None,
            if_match: str | None = None, idempotency_key: str | None = None) -> Committed:
        with self.batch(run=run, actor=actor, idempotency_key=idempotency_key, kind=f"add {file}/{name}") as b:
            if b.replay is not None:
                value = b.replay.get("value")
                return Committed(RecallItem(**value) if value else self.store.get(file, name), b.commit, True)
            self._check_item(file, name, if_match)
            item = self.store.add(file, name, content, owner=owner, ts=ts, source_conv=source_conv)
            b.result = {"value": asdict(item)}
        return Committed(item, b.commit)

    def remove(self, file: str, name: str, *, owner: str | None = None, run: str | None = None,
               actor: str | None = None, if_match: str | None = None,
               idempotency_key: str | None = None) -> Committed:
        with self.batch(run=run, actor=actor, idempotency_key=idempotency_key, kind=f"remove {file}/{name}") as b:
            if b.replay is not None:
                return Committed(bool(b.replay.get("value")), b.commit, True)
            self._check_item(file, name, if_match)
            removed = self.store.remove(file, name, owner=owner)
            b.result = {"value": removed}
        return Committed(removed, b.commit)

    def diary_append(self, content: str, *, ts: str | None = None, date: str | None = None,
                     time: str | None = None, tz=None, owner: str | None = None, source_conv: str | None = None,
                     run: str | None = None, actor: str | None = None,
                     idempotency_key: str | None = None) -> Committed:
        with self.batch(run=run, actor=actor, idempotency_key=idempotency_key, kind="diary") as b:
            if b.replay is not None:
                value = b.replay.get("value")
                return Committed(DiaryItem(**value) if value else None, b.commit, True)
            entry = self.diary.append(content, ts=ts, date=date, time=time, tz=tz, owner=owner,
                                      source_conv=source_conv)
            b.result = {"value": asdict(entry)}
        return Committed(entry, b.commit)

    # -- history ---------------------------------------------------------------

    def history(self, *, file: str | None = None, item: str | None = None, run: str | None = None,
                date: str | None = None, limit: int = 50, cursor: str | None = None) -> HistoryPage:
        """The log, newest first, optionally of one RecallFile, one item, one run or one diary day."""
        if item is not None:
            item = " ".join(item.split())
        return self.db.page(file=file, item=item, run=run, date=date, limit=max(1, int(limit)), cursor=cursor)

    def runs(self, limit: int = 50) -> list[dict]:
        return self.db.runs(limit)

    def resolve(self, point: str | None) -> str:
        """A full commit id for ``HEAD`` / ``HEAD~N``, an id or unique prefix, or an ISO-8601 time."""
        if point is None or point.strip().upper() == "HEAD":
            return self.head()
        text = point.strip()
        back = re.fullmatch(r"HEAD~(\d*)", text, re.IGNORECASE)
        if back:
            cid = self.git.head()
            for _ in range(int(back.group(1) or 1)):
                parents = self.git.commit(cid).parents
                if not parents:
                    raise NotFound(f"{text} goes back beyond the first commit")
                cid = parents[0]
            return cid.decode()
        if _HEX_RE.fullmatch(text):
            text = text.lower()
            if len(text) == 40:
                try:
                    self.git.commit(text.encode())
                    return text
                except KeyError:
                    raise NotFound(f"no commit {text}") from None
            found = self.db.by_prefix(text)
            if len(found) == 1:
                return found[0]
            if len(found) > 1:
                raise ValueError(f"commit prefix {text} is ambiguous")
            if not re.fullmatch(r"\d{4}", text):
                raise NotFound(f"no commit {text}")
        try:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            raise ValueError(f"{point!r} is not a commit id, an ISO-8601 time or HEAD") from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
        found_at = self.db.at_or_before(int(moment.timestamp()))
        if found_at is None:
            raise NotFound(f"no commit at or before {point}")
        return found_at

    def _span(self, old_tree, new_tree) -> tuple[list[ItemChange], str]:
        changes: list[ItemChange] = []
        patch: list[str] = []
        for path in sorted(self.git.changed_paths(old_tree, new_tree)):
            old, new = self.git.blob_at(old_tree, path), self.git.blob_at(new_tree, path)
            changes.extend(path_changes(path, old, new))
            patch.append(unified_patch(path, old, new))
        return changes, "".join(patch)

    def commit(self, point: str) -> CommitDiff:
        """One commit: its history entry, what it did item by item, and its patch."""
        cid = self.resolve(point)
        obj = self.git.commit(cid.encode())
        parent_tree = self.git.commit_tree(obj.parents[0]) if obj.parents else None
        changes, patch = self._span(parent_tree, obj.tree)
        entry = self.db.entry(cid)
        if entry is None:  # a commit not on the branch
            entry = HistoryEntry(cid, [p.decode() for p in obj.parents], iso(obj.commit_time),
                                 obj.author.decode("utf-8", "replace").split(" <")[0], None, None, None, None,
                                 None, None, None, None, obj.message.decode("utf-8", "replace").split("\n")[0],
                                 len(changes))
        return CommitDiff(entry, changes, patch)

    def diff(self, a: str, b: str = "HEAD") -> CommitDiff:
        """What changed from ``a`` to ``b``, item by item."""
        ta = self.git.commit_tree(self.resolve(a).encode())
        tb = self.git.commit_tree(self.resolve(b).encode())
        changes, patch = self._span(ta, tb)
        return CommitDiff(None, changes, patch)

    def changed_paths(self, old: str | None, new: str | None) -> set[str]:
        ta = self.git.commit_tree(old.encode()) if old else None
        tb = self.git.commit_tree(new.encode()) if new else None
        return self.git.changed_paths(ta, tb)

    def snapshot(self, point: str) -> Snapshot:
        """The memory at a commit or time, read from the object store."""
        return Snapshot(self.git, self.resolve(point).encode())

    # -- undo ------------------------------------------------------------------

    def _state(self) -> State:
        return State(lambda p: read_bytes(self.root / p))

    def _revertible(self, point: str) -> str:
        cid = self.resolve(point)
        if not self.git.commit(cid.encode()).parents:
            raise ValueError("the first commit of a memory folder cannot be reverted")
        return cid

    def _plan_revert(self, cid: str, force: bool) -> tuple[Plan, dict]:
        state, conflicts = self._state(), []
        plan_revert(self.git, state, cid.encode(), conflicts, force)
        return finish(state, cid, conflicts)

    def _plan_rollback(self, run: str, force: bool) -> tuple[Plan, dict, list[str]]:
        commits = self.db.run_commits(run)
        if not commits:
            raise NotFound(f"no commits of run {run!r}")
        state, conflicts = self._state(), []
        for cid in commits:
            plan_revert(self.git, state, cid.encode(), conflicts, force)
        plan, writes = finish(state, run, conflicts)
        return plan, writes, commits

    def _plan_restore(self, target: str) -> tuple[Plan, dict]:
        state = self._state()
        plan_restore(self.git, state, self.git.head(), target.encode())
        return finish(state, target, [])

    def preview_revert(self, point: str) -> Plan:
        return self._plan_revert(self._revertible(point), False)[0]

    def preview_rollback(self, run: str) -> Plan:
        return self._plan_rollback(run, False)[0]

    def preview_restore(self, point: str) -> Plan:
        return self._plan_restore(self.resolve(point))[0]

    def _apply(self, writes: dict, action: str, detail: str) -> None:
        for path, (old, new) in writes.items():
            folder, name = split_path(path)
            record = {"ts": utc_now(), "action": action, ("file" if folder == "wiki" else "date"): name,
                      "detail": detail}
            self.writer.apply({path: (old, new)}, record)

    def revert(self, point: str, *, force: bool = False, actor: str | None = None,
               idempotency_key: str | None = None) -> Committed:
        """Undo one commit, item by item, as a new commit; conflicts raise unless ``force``."""
        cid = self._revertible(point)
        entry = self.db.entry(cid)
        summary = entry.summary if entry else cid[:12]
        with self.batch(action="revert", actor=actor or "operator", message=f"revert {cid[:12]}: {summary}",
                        idempotency_key=idempotency_key, kind=f"revert {cid}", extra={"reverts": cid}) as b:
            if b.replay is not None:
                return Committed(None, b.commit, True)
            plan, writes = self._plan_revert(cid, force)
            if plan.conflicts and not force:
                raise Conflict(f"{len(plan.conflicts)} item(s) changed after {cid[:12]}", conflicts=plan.conflicts)
            self._apply(writes, "revert", f"revert {cid[:12]}")
            b.result = {}
        return Committed(plan, b.commit)

    def rollback(self, run: str, *, force: bool = False, actor: str | None = None,
                 idempotency_key: str | None = None) -> Committed:
        """Undo every commit of a run (newest first) as one new commit."""
        with self.batch(action="rollback", actor=actor or "operator", message=f"roll back run {run}",
                        idempotency_key=idempotency_key, kind=f"rollback {run}") as b:
            if b.replay is not None:
                return Committed(None, b.commit, True)
            plan, writes, commits = self._plan_rollback(run, force)
            b.unit.info["reverts"] = " ".join(c[:12] for c in commits)
            if plan.conflicts and not force:
                raise Conflict(f"{len(plan.conflicts)} item(s) changed after run {run}", conflicts=plan.conflicts)
            self._apply(writes, "rollback", f"rollback run {run}")
            b.result = {}
        return Committed(plan, b.commit)

    def restore(self, point: str, *, actor: str | None = None, idempotency_key: str | None = None) -> Committed:
        """Make ``wiki/`` and ``diary/`` what they were at a commit or time, as one new commit."""
        target = self.resolve(point)
        with self.batch(action="restore", actor=actor or "operator", message=f"restore to {target[:12]}",
                        idempotency_key=idempotency_key, kind=f"restore {target}", extra={"reverts": target}) as b:
            if b.replay is not None:
                return Committed(None, b.commit, True)
            plan, writes = self._plan_restore(target)
            self._apply(writes, "restore", f"restore to {target[:12]}")
            b.result = {}
        return Committed(plan, b.commit)

    # -- housekeeping ------------------------------------------------------------

    def pack(self) -> None:
        """Pack loose objects now (delta-compressed by the ``git`` CLI when it is installed)."""
        with self.writer._thread_lock, self._lock.hold():
            self._pack_locked()

    def _pack_locked(self) -> None:
        git = shutil.which("git")
        if git:
            env = dict(os.environ, GIT_DIR=str(self.root / ".git"))
            run = lambda *args: subprocess.run([git, "-c", "gc.auto=0", *args], cwd=self.root, env=env,  # noqa: E731
                                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True)
            packs = list((self.root / ".git" / "objects" / "pack").glob("*.pack"))
            run("repack", "-d", "-q", *(["-a"] if len(packs) >= 8 else []))
            run("prune-packed", "-q")
        else:
            self.git.store.pack_loose_objects()
        self.db.reset_since_pack()

    def verify(self) -> list[str]:
        """Problems found: a missing branch or unreadable objects at the branch's tip (hand edits are not problems)."""
        problems = []
        head = self.git.head()
        if head is None:
            return ["no branch main"]
        try:
            tree = self.git.commit_tree(head)
            for path, sha in self.git.tracked(tree).items():
                self.git.blob(sha)
        except KeyError as exc:
            problems.append(f"missing object {exc}")
        return problems
