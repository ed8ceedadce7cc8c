"""Forgetting one item or diary entry of a memory folder, with its history.

Design notes: docs/explanation/erasure.md (``wikimem/versioned/forgetting/forget.py``).
"""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from wikimem.errors import Erased, InvalidValue
from wikimem.fsio import atomic_write, read_bytes

from ..history import DB_NAME, HistoryDB
from ..intent import APPLIED, IntentLog, Step
from ..messages import parse_trailers
from ..objects import BRANCH, GitRepo, oid, ref
from ..replication import (
    REPLACED,
    STAGED,
    TRACKED,
    Replica,
    is_ancestor,
    local_only,
    merge_base,
    replaced,
    replay,
    staged_ref,
    staged_tips,
    switch_to,
    tracking,
)
from .pruning import Pruned, prune
from .rewrite import (
    PLACEHOLDER,
    Rewriter,
    Target,
    marker_message,
    name_digest,
    reachable,
    rewrite_barrier,
)

__all__ = ["Forgetting", "Forgotten", "GENERATION_NAME", "generation", "bump_generation"]

log = logging.getLogger(__name__)

GENERATION_NAME = "wikimem-generation"


def generation(root: Path | str) -> bytes | None:
    """The folder's history generation (changes whenever its history is rewritten; None before any)."""
    return read_bytes(Path(root) / ".git" / GENERATION_NAME)


@dataclass(frozen=True)
class Forgotten:
    """What one forget did to the folder (no text, no item name)."""

    target: str  # "wiki item in preferences" / "diary entry 2026-07-21 14:30"
    found: bool  # whether the target was anywhere in the history
    versions: int  # distinct texts it held
    old_head: str
    head: str
    rewritten: int  # commits rewritten
    marker: str | None  # the commit saying what was forgotten
    remote: str  # "replaced" (force-updated with compare-and-swap), "none" (no remote)
    pruned: dict | None
    replayed: bool = False

    def to_dict(self) -> dict:
        return asdict(self)


class Forgetting:
    """Forget of one folder: built by the store with what it needs (see the module docstring)."""

    def __init__(self, git: GitRepo, db: HistoryDB, intent: IntentLog, root: Path, journal, door, *,
                 replica: Callable[[], Replica | None]):
        self.git = git
        self.db = db
        self.intent = intent
        self.root = Path(root)
        self.journal = journal
        self.door = door  # every file of the work tree is written through it
        self._replica = replica

    # -- the target ---------------------------------------------------------------

    def resolve(self, kind: str, *, file: str | None = None, name: str | None = None, date: str | None = None,
                time_: str | None = None, index: int | None = None, layer: str | None = None) -> Target:
        """The target of a forget request (in a character's ``layer`` of the folder); a diary entry's text read from
        ``HEAD`` (else from its history)."""
        from wikimem.naming import (
            sanitize_item_name,
            validate_character_id,
            validate_date,
            validate_file,
            validate_time,
        )

        layer = validate_character_id(layer) if layer is not None else None
        if kind == "wiki":
            return Target("wiki", file=validate_file(file or ""), name=sanitize_item_name(name or ""), layer=layer)
        if kind != "diary":
            raise InvalidValue(f"forget: kind must be wiki or diary, got {kind!r}")
        date, time_ = validate_date(date or ""), validate_time(time_ or "")
        probe = Target("diary", date=date, time=time_, layer=layer)
        head = self.git.head()
        now = probe.blocks(self.git.blob_at(self.git.commit_tree(head), probe.path)) if head else []
        if index is not None:
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(now):
                raise InvalidValue(f"forget: diary {date} {time_} has {len(now)} entries now; index must be "
                                   f"from 0 to {len(now) - 1}")
            return Target("diary", date=date, time=time_, content=now[index], layer=layer)
        texts = sorted(set(now)) or sorted(Rewriter(self.git, probe).collect(self._order()))
        if len(texts) > 1:
            raise InvalidValue(f"forget: diary {date} {time_} holds {len(texts)} different entries; give the index "
                               "of the one to forget")
        return Target("diary", date=date, time=time_, content=texts[0] if texts else None, layer=layer)

    def _refs(self) -> dict[bytes, bytes]:
        refs = self.git.repo.refs
        out: dict[bytes, bytes] = {}
        for name in refs.allkeys():
            if name == b"HEAD":
                continue
            try:
                out[name] = refs[name]
            except KeyError:
                continue
        return out

    def _order(self) -> list[bytes]:
        return reachable(self.git, set(self._refs().values()))

    # -- the run ---------------------------------------------------------------------

    def run(self, target: Target, *, actor: str, key: str | None = None,
            before: Callable[[set[str], set[str]], None] | None = None) -> Forgotten:
        """Forget ``target`` (the caller holds the owner lock and settled the folder). ``before(texts, runs)`` is
        called with every text the target held and the runs that wrote it, before anything is rewritten (to
        scrub what lies outside the folder while the texts are still known)."""
        head = self.git.head()
        old_head = head.decode() if head else ""
        if replaced(self.git.repo) is not None:  # the folder is settled: a note left by a cut-short run
            self.git.repo.refs.remove_if_equals(REPLACED, None)
        if head is None or (target.kind == "diary" and target.content is None):
            return self._done(Forgotten(target.where(), False, 0, old_head, old_head, 0, None, "none", None))
        refs = self._refs()
        rewriter = Rewriter(self.git, target)
        order = reachable(self.git, set(refs.values()), rewriter.cache)
        texts = rewriter.collect(order)
        known = self.db.idem(key) if key is not None else None
        if known is not None:  # this key's marker is on main: a run cut short after main moved
            if texts:  # … before the other refs followed
                rewriter.run(order)
                rewriter.write()
                self._move_others(refs, rewriter.commits, skip_tracking=self._replica() is not None)
            self._push_staged(head)
            return self._done(self._replayed(target, known[0], old_head), target)
        if not texts:
            return self._done(Forgotten(target.where(), False, 0, old_head, old_head, 0, None, "none", None))
        self._scrub_quarantine(texts)
        if before is not None:
            before(set(texts), set(rewriter.runs))
        touches = self.db.touches_by_commit()  # (the rebuilt index reuses them: no commit diffed again)
        rewriter.run(order)
        rewriter.write()
        parent = rewriter.commits[head]
        marker = self.git.make_commit(self.git.commit(parent).tree, [parent],
                                      marker_message(target, rewritten=rewriter.touched, versions=len(texts),
                                                     old_head=old_head, actor=actor, key=key), actor or "operator")
        remote = self._move(head, marker, refs, rewriter.commits)
        done = Forgotten(target.where(), True, len(texts), old_head, marker.decode(), rewriter.touched,
                         marker.decode(), remote, None)
        return self._done(done, target, _hints(touches, rewriter, target) | {marker: []})

    def _replayed(self, target: Target, marker: str, head: str) -> Forgotten:
        """What a forget already made under this key did (read back from its marker commit)."""
        _, trailers, _ = parse_trailers(self.git.commit(marker.encode()).message.decode("utf-8", "replace"))
        counts = [int(n) for n in re.findall(r"\d+", trailers.get("Rewritten", ""))] + [0, 0]
        return Forgotten(target.where(), True, counts[1], trailers.get("Rewrote", ""), head, counts[0], marker,
                         "replaced" if self._replica() else "none", None, replayed=True)

    def _move(self, head: bytes, new: bytes, refs: dict[bytes, bytes], commits: dict[bytes, bytes]) -> str:
        """Files, remote, ``main``, then every other ref: each step as a write does it (see the docstring)."""
        old_tree, new_tree = self.git.commit_tree(head), self.git.commit_tree(new)
        paths = sorted(self.git.changed_paths(old_tree, new_tree))
        # The rewritten history on disk before a record names it (one sync of the file system), and the log's
        # old records — they hold the forgotten text, compressed or not — wiped.
        self.intent.checkpoint(head.decode(), wipe=True)
        blobs = {p: (found[1].decode() if (found := self.git.entry(new_tree, p)) else None) for p in paths}
        record = self.intent.append([Step(new.decode(), head.decode(), blobs)], {})
        for path in paths:
            data = self.git.blob_at(new_tree, path)
            self.door.put(path, data, durable=False)
        replica = self._replica()
        remote = "none"
        if replica is not None:
            known = tracking(self.git.repo)
            if known is not None:  # killed once the remote is replaced: the next settle follows it (see follow)
                self.git.repo.refs.set_if_equals(REPLACED, None, oid(known))
            replica.replace(self.git, new, known)  # RemoteMoved / RemoteUnavailable: nothing here moved
            remote = "replaced"
        if not self.git.move_ref(head, new):
            raise RuntimeError(f"{self.root}: branch moved while the owner lock was held")
        self._move_others(refs, commits, skip_tracking=replica is not None)
        self._push_staged(new)
        self.git.update_index({p: (self.git.entry(new_tree, p) or (None, None))[1] for p in paths})
        self.git.repo.refs.remove_if_equals(REPLACED, None)
        self.intent.mark(record, APPLIED)
        return remote

    def _move_others(self, refs: dict[bytes, bytes], commits: dict[bytes, bytes], *, skip_tracking: bool) -> None:
        """Every ref but ``main`` (and the tracking ref the push set) to its rewritten commit."""
        for name, value in refs.items():
            if name in (BRANCH, REPLACED) or (skip_tracking and (name == b"refs/remotes/origin/main"
                                                                  or name.startswith(TRACKED))):
                continue  # (a tracking ref moves when the remote does: _push_staged)
            mapped = commits.get(value, value)
            if mapped != value:
                self.git.repo.refs.set_if_equals(ref(name), oid(value), oid(mapped))

    def _push_staged(self, have: bytes | None) -> None:
        """With a remote: every staged run's branch (runs on probation) the rewrite changed is replaced there
        too, by compare-and-swap from what this folder knows the remote holds — else its old history, the
        forgotten text with it, would stay on the remote. A branch the remote does not have is left to the
        staging's own push; one the remote moved meanwhile raises :class:`RemoteMoved` (the next call retries:
        local and tracking values still differ)."""
        replica = self._replica()
        if replica is None:
            return
        tracked = staged_tips(self.git.repo, TRACKED)
        for run, tip in staged_tips(self.git.repo, STAGED).items():
            known = tracked.get(run)
            if known is not None and known != tip:
                base = merge_base(self.git, tip, have) if have is not None else None  # (the run's rewritten base)
                replica.remote.push(self.git.repo, tip.decode(), known.decode(), name=staged_ref(run),
                                    have=base.decode() if base else None, rewritten=True)

    # -- a history replaced on the remote ------------------------------------------------------

    def follow(self, head: bytes | None, known: bytes, *, push: Callable[[GitRepo, bytes], None] | None) -> bool:
        """Called under the lock when settling with the remote: whether a fetch found the remote's history
        replaced (:data:`REPLACED`), in which case it is followed — this folder's own commits the remote never
        had are replayed on top of it (pushed first with ``push``), the work tree switched, the old history
        pruned. An erasure's tombstone raises :class:`~wikimem.errors.Erased` (the host drops its copy)."""
        old = replaced(self.git.repo)
        if old is None:
            return False
        if is_ancestor(self.git, old, known):  # the remote went back to a descendant: nothing replaced
            self.git.repo.refs.remove_if_equals(REPLACED, None)
            return False
        # (down to what both histories hold: a tombstone this copy grew from — an owner made again after its
        # erasure — is no news)
        barrier = rewrite_barrier(self.git, known, merge_base(self.git, head, known) if head is not None else None)
        if barrier.erased:
            raise Erased(f"{self.root.name}: erased everywhere (its remote holds the erasure's tombstone)")
        tip = known
        if head is not None:
            base = old if is_ancestor(self.git, old, head) else merge_base(self.git, head, old)
            mine = local_only(self.git, head, base)
            if mine:
                tip = replay(self.git, mine, known)
                if push is not None and tip != known:
                    push(self.git, tip)
        switch_to(self.git, self.root, tip)
        self.git.repo.refs.remove_if_equals(REPLACED, None)
        self._scrub_journal(lambda file, item: any(_forgot(v, file, item) for v in barrier.forgot))
        self._finish()
        return True

    # -- what the old history left ------------------------------------------------------------

    def _done(self, done: Forgotten, target: Target | None = None,
              hints: dict[bytes, list[tuple]] | None = None) -> Forgotten:
        """:meth:`_finish`, then ``done`` with what the prune did."""
        if target is not None and target.kind == "wiki":
            self._scrub_journal(lambda file, item: file == target.file_key and item == target.name)
        pruned = self._finish(hints)
        return Forgotten(**{**asdict(done), "pruned": pruned.to_dict()})

    def _finish(self, hints: dict[bytes, list[tuple]] | None = None) -> Pruned:
        """History index rebuilt (``hints``: what each new commit touched, known), generation changed, unreachable
        objects pruned."""
        self._reset_history(hints)
        bump_generation(self.root)
        pruned = prune(self.root)
        self.git.reopen()
        # The intent log's records hold the rounds' objects and results (the text of what was forgotten too):
        # everything is on disk now (one sync), and they are wiped.
        head = self.git.head()
        self.intent.checkpoint(head.decode() if head else None, wipe=True)
        bump_generation(self.root)
        return pruned

    def _reset_history(self, hints: dict[bytes, list[tuple]] | None = None) -> None:
        self.db.close()
        for suffix in ("", "-wal", "-shm"):
            try:
                os.unlink(self.root / ".git" / (DB_NAME + suffix))
            except FileNotFoundError:
                pass
        self.db.sync(hints)

    def _scrub_quarantine(self, texts: set[str]) -> None:
        """Delete what ``wikimem repair`` moved aside (``.git/wikimem-quarantine/``) when it holds one of the texts."""
        from ..repair import QUARANTINE

        forms = [t.encode("utf-8") for t in texts if t]
        for path in sorted((self.root / ".git" / QUARANTINE).rglob("*")):
            if path.is_file() and not path.is_symlink() and any(f in path.read_bytes() for f in forms):
                path.unlink()

    def _scrub_journal(self, forgotten: Callable[[str, str], bool]) -> None:
        """``journal.jsonl`` (not versioned) with the records of a forgotten item named :data:`PLACEHOLDER`."""
        path = self.journal.path
        data = read_bytes(path)
        if not data:
            return
        lines = []
        changed = False
        for line in data.decode("utf-8", "replace").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                lines.append(line)
                continue
            if (isinstance(rec, dict) and isinstance(rec.get("file"), str) and isinstance(rec.get("item"), str)
                    and forgotten(f"{rec['layer']}/{rec['file']}" if rec.get("layer") else rec["file"], rec["item"])):
                rec["item"] = PLACEHOLDER
                rec.pop("detail", None)
                line = json.dumps(rec, ensure_ascii=False, separators=(",", ":"))
                changed = True
            lines.append(line)
        if changed:
            atomic_write(path, ("\n".join(lines) + "\n").encode("utf-8"))


def bump_generation(root: Path | str) -> None:
    """Say that the folder's history was rewritten: every process reopens it on its next lookup."""
    atomic_write(Path(root) / ".git" / GENERATION_NAME, secrets.token_hex(8).encode())


def _hints(touches: dict[str, list[tuple]], rewriter: Rewriter, target: Target) -> dict[bytes, list[tuple]]:
    """What each rewritten commit touched: what its old commit did, but the target (a wiki item anywhere; a diary
    entry's minute in the commits that changed it)."""
    out: dict[bytes, list[tuple]] = {}
    for old, new in rewriter.commits.items():
        known = touches.get(old.decode())
        if known is None:
            continue
        def layer_of_touch(t: tuple) -> str | None:
            return t[5] if len(t) > 5 else None

        if target.kind == "wiki":
            kept = [t for t in known if not (t[0] == "wiki" and t[1] == target.file and t[2] == target.name
                                             and layer_of_touch(t) == target.layer)]
        elif old in rewriter.wrote:
            kept = [t for t in known if not (t[0] == "diary" and t[3] == target.date and t[4] == target.time
                                             and layer_of_touch(t) == target.layer)]
        else:
            kept = list(known)
        out[new] = kept
    return out


def _forgot(value: str, file: str, item: str) -> bool:
    """Whether a marker's ``Wikimem-Forgot`` value (``wiki <file> <salt>:<digest>``) names this item."""
    parts = value.split(" ")
    if len(parts) != 3 or parts[0] != "wiki" or parts[1] != file or ":" not in parts[2]:
        return False
    return name_digest(item, parts[2].split(":", 1)[0]) == parts[2]
