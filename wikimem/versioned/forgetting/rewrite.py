"""History rewritten without one item or diary entry: what forgetting does to the git objects.

- :class:`Target` — what to forget: a wiki item (file, name) or a diary entry (day, minute, text);
- :func:`reachable` — the commits of some refs, parents first;
- :class:`Rewriter` — every commit rewritten without the target: the blob of its file re-rendered
  without the item's block, the trees above it, the message scrubbed (summary, body, ``Wikimem-Item``,
  ``Wikimem-Journal`` records, ``Wikimem-Request`` of the commits that wrote it) and ``Wikimem-Reverts``
  ids mapped to the new commits; commits before the target first appeared keep their ids. New objects
  are collected and written as one pack (:meth:`Rewriter.write`);
- :func:`marker_message` — the commit put on top: what was forgotten (the file or the day, a salted
  digest of the name), when and by whom, never the text;
- :func:`rewrite_barrier` — the forget markers and erasure tombstones a fetched history holds beyond a
  commit, so that a host that held the old history drops it instead of replaying it back.

Nothing here takes a lock or moves a ref: :mod:`wikimem.versioned.forgetting.forget` does, under the owner lock.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from dulwich.objects import Blob, Commit, ShaFile, Tree

from wikimem.format import (
    DIARY_DIR,
    WIKI_DIR,
    layer_prefix,
    parse_blocks,
    parse_day,
    parse_wiki,
    render_day,
    render_wiki,
)

from ..messages import clean_value, parse_trailers, printable
from ..objects import GitRepo, oid
from ..walk import parents_first

__all__ = ["Target", "Rewriter", "reachable", "marker_message", "rewrite_barrier", "Barrier", "PLACEHOLDER",
           "FORGET_ACTION", "ERASED_ACTION", "tombstone_message", "name_digest"]

PLACEHOLDER = "[forgotten]"
FORGET_ACTION = "forget"
ERASED_ACTION = "erase-owner"
# Free text shorter than this is not searched for in summaries and bodies (it would match ordinary words);
# the item's name and its records are scrubbed whatever their length.
MIN_SCRUB = 6
_DIR_MODE = 0o040000


@dataclass(frozen=True)
class Target:
    """What to forget: ``kind`` ``"wiki"`` (``file``, ``name``) or ``"diary"`` (``date``, ``time``, ``content``)."""

    kind: str
    file: str | None = None
    name: str | None = None
    date: str | None = None
    time: str | None = None
    content: str | None = None  # diary: the entry's text (every entry of that minute with it goes)
    layer: str | None = None  # a character's layer of the folder (None: the shared one)

    @property
    def path(self) -> str:
        inner = f"{WIKI_DIR}/{self.file}.md" if self.kind == "wiki" else f"{DIARY_DIR}/{self.date}.md"
        return layer_prefix(self.layer) + inner

    def where(self) -> str:
        """What a marker may say of it: the file (never the item's name) or the day and minute, and its layer."""
        where = f"wiki item in {self.file}" if self.kind == "wiki" else f"diary entry {self.date} {self.time}"
        return where + (f" of {self.layer}'s layer" if self.layer else "")

    @property
    def file_key(self) -> str | None:
        """The file as a marker names it: ``preferences``, or ``kai/preferences`` in a character's layer."""
        return f"{self.layer}/{self.file}" if self.layer and self.file else self.file

    def blocks(self, data: bytes | None) -> list[str]:
        """The texts of the target's blocks in one version of its file (hidden duplicates too)."""
        if data is None:
            return []
        text = data.decode("utf-8", "replace")
        if self.kind == "wiki":
            return [b.content for b in parse_blocks(text) if b.heading == self.name]
        return [e.content for e in parse_day(data, self.date or "") if e.time == self.time
                and (self.content is None or e.content == self.content)]

    def without(self, data: bytes) -> bytes | None:
        """The file without the target (None: nothing else was in it, the file goes)."""
        if self.kind == "wiki":
            return render_wiki(self.file or "", [i for i in parse_wiki(data, self.file or "") if i.name != self.name])
        date = self.date or ""
        return render_day(date, [e for e in parse_day(data, date)
                                 if not (e.time == self.time and (self.content is None or e.content == self.content))])


def name_digest(name: str, salt: str | None = None) -> str:
    """``salt:sha256`` of an item name: whoever knows a name can check it, nobody can read it back."""
    salt = salt or secrets.token_hex(8)
    return f"{salt}:{hashlib.sha256((salt + chr(0) + name).encode('utf-8', 'surrogatepass')).hexdigest()[:32]}"


def reachable(git: GitRepo, tips: Iterable[bytes], cache: dict[bytes, Commit] | None = None) -> list[bytes]:
    """Every commit reachable from ``tips``, parents before children (each commit read kept in ``cache``)."""
    return parents_first(git, tips, cache={} if cache is None else cache)


@dataclass
class Rewriter:
    """The commits of a history rewritten without ``target`` (see the module docstring)."""

    git: GitRepo
    target: Target
    texts: set[str] = field(default_factory=set)  # every text the target held (collected by :meth:`collect`)
    runs: set[str] = field(default_factory=set)  # the runs of the commits that wrote or removed it
    commits: dict[bytes, bytes] = field(default_factory=dict)  # old commit → new commit
    touched: int = 0  # commits whose tree or message changed
    wrote: set[bytes] = field(default_factory=set)  # old commits that changed the target (their touches of it go)
    cache: dict[bytes, Commit] = field(default_factory=dict)  # commits read (shared with :func:`reachable`)
    _blobs: dict[bytes, bytes | None] = field(default_factory=dict)
    _trees: dict[bytes, bytes | None] = field(default_factory=dict)
    _found: dict[bytes, tuple[str, ...]] = field(default_factory=dict)
    _new: dict[bytes, ShaFile] = field(default_factory=dict)

    # -- what the target held ----------------------------------------------------

    def _commit(self, cid: bytes) -> Commit:
        commit = self.cache.get(cid)
        if commit is None:
            commit = self.cache[cid] = self.git.commit(cid)
        return commit

    def _blob_of(self, tree_id: bytes | None) -> bytes | None:
        found = self.git.entry(tree_id, self.target.path)
        return None if found is None or found[0] == _DIR_MODE else found[1]

    def _held(self, blob: bytes | None) -> tuple[str, ...]:
        """The target's texts in one blob (memoised: a file is the same blob across many commits)."""
        if blob is None:
            return ()
        if blob not in self._found:
            self._found[blob] = tuple(self.target.blocks(self.git.blob(blob)))
        return self._found[blob]

    def collect(self, order: list[bytes]) -> set[str]:
        """Every text the target held in the commits ``order`` (a diary target: its one text); the runs of the
        commits that changed it go to :attr:`runs`."""
        for cid in order:
            commit = self._commit(cid)
            held = self._held(self._blob_of(commit.tree))
            self.texts.update(held)
            before = self._held(self._blob_of(self._commit(commit.parents[0]).tree)) if commit.parents else ()
            if held != before:
                self.wrote.add(cid)
                run = parse_trailers(commit.message.decode("utf-8", "replace"))[1].get("Run")
                if run:
                    self.runs.add(run)
        return self.texts

    # -- rewriting ---------------------------------------------------------------------

    def _blob(self, blob: bytes) -> bytes | None:
        """The new blob id of a version of the target's file (the same id when the target is not in it)."""
        if blob not in self._blobs:
            if not self._held(blob):
                self._blobs[blob] = blob
            else:
                data = self.target.without(self.git.blob(blob))
                if data is None:
                    self._blobs[blob] = None
                else:
                    new = Blob.from_string(data)
                    self._new[new.id] = new
                    self._blobs[blob] = new.id
        return self._blobs[blob]

    def _tree(self, root_id: bytes) -> bytes:
        if root_id in self._trees:
            return self._trees[root_id] or root_id
        changed, new = self._rewrite(root_id, self.target.path.split("/"))
        if changed and new is None:  # the root itself became empty: it is still a tree
            empty = Tree()
            self._new[empty.id] = empty
            new = empty.id
        self._trees[root_id] = new if changed else None
        return new if changed and new is not None else root_id

    def _rewrite(self, tree_id: bytes, parts: list[str]) -> tuple[bool, bytes | None]:
        """The tree ``tree_id`` with the target's file rewritten below it along ``parts``: ``(changed, new tree id
        or None when it became empty)``."""
        tree = self.git.tree(tree_id)
        key = parts[0].encode()
        if key not in tree:
            return False, tree_id
        mode, sha = tree[key]
        if len(parts) == 1:
            new = self._blob(sha)
            if new == sha:
                return False, tree_id
        elif mode != _DIR_MODE:
            return False, tree_id
        else:
            changed, new = self._rewrite(sha, parts[1:])
            if not changed:
                return False, tree_id
        out = _copy(tree)
        if new is None:
            del out[key]
        else:
            out.add(key, mode, oid(new))
        if not out.items():
            return True, None
        self._new[out.id] = out
        return True, out.id

    def run(self, order: list[bytes]) -> dict[bytes, bytes]:
        """Rewrite the commits ``order`` (parents first); ``{old: new}`` of every commit."""
        for cid in order:
            old = self._commit(cid)
            parents = [self.commits.get(p, p) for p in old.parents]
            tree = self._tree(old.tree)
            wrote = cid in self.wrote
            text = old.message.decode("utf-8", "replace")
            message = scrub_message(text, self.target, self.texts, self._new_id, wrote=wrote)
            if tree == old.tree and parents == list(old.parents) and message == text:
                self.commits[cid] = cid
                continue
            new = Commit()
            new.tree = oid(tree)
            new.parents = [oid(p) for p in parents]
            new.author, new.committer = old.author, old.committer
            new.author_time, new.commit_time = old.author_time, old.commit_time
            new.author_timezone, new.commit_timezone = old.author_timezone, old.commit_timezone
            new.encoding = old.encoding or b"UTF-8"
            new.message = message.encode("utf-8")
            self._new[new.id] = new
            self.commits[cid] = new.id
            if tree != old.tree or message != text:
                self.touched += 1
        return self.commits

    def _new_id(self, old: str) -> str:
        """The new id of a commit (hex; itself when it was not rewritten or is not known)."""
        found = self.commits.get(old.encode("ascii", "replace"))
        return old if found is None else found.decode("ascii")

    def add(self, obj: ShaFile) -> None:
        """One more object to write with the rewrite (the marker commit)."""
        self._new[obj.id] = obj

    def write(self) -> int:
        """Write the new objects as one pack; how many."""
        objects = [o for sha, o in self._new.items() if oid(sha) not in self.git.store]
        if objects:
            self.git.store.add_objects([(o, None) for o in objects])
        return len(objects)


def _copy(tree: Tree) -> Tree:
    out = Tree()
    for item in tree.iteritems():
        out.add(item.path, item.mode, item.sha)
    return out


# -- messages -------------------------------------------------------------------------------

def _variants(texts: Iterable[str]) -> list[str]:
    """The forms a text can take in a commit message: as written, on one line, escaped as the sink escapes."""
    out: set[str] = set()
    for text in texts:
        flat = " ".join(text.split())
        for form in (text, flat, printable(flat), json.dumps(flat, ensure_ascii=True)[1:-1]):
            if len(form) >= MIN_SCRUB:
                out.add(form)
    return sorted(out, key=len, reverse=True)


# Trailers that name another commit, mapped to its rewritten id: a revert's target and a staged run's base on main
# (ancestors: rewritten first), an approval's staged tip (mapped when its branch was rewritten first; else it names
# a commit the prune removes, as the approved branch is gone).
_COMMIT_IDS = ("Wikimem-Reverts", "Wikimem-Base", "Wikimem-Staged-Tip")


def scrub_message(message: str, target: Target, texts: set[str], ids: Callable[[str], str], *, wrote: bool) -> str:
    """``message`` without the target: its name and texts replaced by :data:`PLACEHOLDER`, its records scrubbed,
    the ``Wikimem-Request`` of a commit that ``wrote`` it dropped, commit ids (:data:`_COMMIT_IDS`) mapped by
    ``ids``."""
    _, trailers, _ = parse_trailers(message)
    name = clean_value(target.name) if target.kind == "wiki" else None
    same_file = trailers.get("File") == target.file
    pattern = None
    if name is not None:
        pattern = re.compile(re.escape(f"{target.file}/{name}") + r"(?=$|[\s:,;)])")
    forms = _variants(texts)
    out = []
    for line in message.split("\n"):
        key, sep, value = line.partition(": ")
        if sep and key.startswith("Wikimem-"):
            if key == "Wikimem-Journal":
                line = f"{key}: {_scrub_record(value, target, texts)}"
            elif key == "Wikimem-Item" and name is not None and same_file and value.strip() == name:
                line = f"{key}: {PLACEHOLDER}"
            elif key == "Wikimem-Request" and wrote:
                continue
            elif key in _COMMIT_IDS:
                line = f"{key}: {ids(value.strip())}"
            out.append(line)
            continue
        if pattern is not None:
            line = pattern.sub(f"{target.file}/{PLACEHOLDER}", line)
        for form in forms:
            if form in line:
                line = line.replace(form, PLACEHOLDER)
        out.append(line)
    return "\n".join(out)


def _scrub_record(value: str, target: Target, texts: set[str]) -> str:
    try:
        rec = json.loads(value)
    except ValueError:
        return value
    if not isinstance(rec, dict):
        return value
    if target.kind == "wiki" and rec.get("file") == target.file and rec.get("item") == target.name:
        rec["item"] = PLACEHOLDER
    detail = rec.get("detail")
    if isinstance(detail, str) and any(t and t in detail for t in texts):
        rec.pop("detail")
    return json.dumps(rec, ensure_ascii=True, separators=(",", ":"))


def marker_message(target: Target, *, rewritten: int, versions: int, old_head: str, actor: str, key: str | None,
                   salt: str | None = None) -> str:
    """The message of the commit a forget puts on top of the rewritten history (no text, no name)."""
    lines = [f"forget: a {target.where()}, with its history", "",
             f"{rewritten} commit{'s' if rewritten != 1 else ''} rewritten without it; its text is in no commit,",
             "tree or blob of this history.", "",
             f"Wikimem-Action: {FORGET_ACTION}"]
    if target.kind == "wiki":
        lines += [f"Wikimem-File: {target.file}", f"Wikimem-Forgot: wiki {target.file_key} "
                                                   f"{name_digest(target.name or '', salt)}"]
    else:
        lines += [f"Wikimem-Date: {target.date}", f"Wikimem-Time: {target.time}",
                  f"Wikimem-Forgot: diary {target.date} {target.time}"]
    if target.layer:
        lines.append(f"Wikimem-Layer: {target.layer}")
    lines.append(f"Wikimem-Rewrote: {old_head}")
    lines.append(f"Wikimem-Rewritten: {rewritten} commits, {versions} versions")
    lines.append(f"Wikimem-Actor: {clean_value(actor) or 'operator'}")
    if key:
        lines.append(f"Wikimem-Idempotency-Key: {clean_value(key)}")
    return "\n".join(lines) + "\n"


def tombstone_message() -> str:
    """The one commit an erased owner's remote is left with where the remote cannot be deleted (no id, no text)."""
    return ("erased: this owner's memory and its history were erased\n\n"
            f"Wikimem-Action: {ERASED_ACTION}\n")


@dataclass(frozen=True)
class Barrier:
    """What a fetched history says of the history before it: erased, or rewritten from ``rewrote``."""

    erased: bool = False
    rewrote: tuple[str, ...] = ()  # the old heads forget markers replaced, newest first
    forgot: tuple[str, ...] = ()  # their Wikimem-Forgot values


def rewrite_barrier(git: GitRepo, tip: bytes, stop: bytes | None, limit: int = 100_000) -> Barrier:
    """The erasure tombstones and forget markers on the first-parent chain from ``tip`` down to ``stop``."""
    rewrote: list[str] = []
    forgot: list[str] = []
    cid: bytes | None = tip
    for _ in range(limit):
        if cid is None or cid == stop:
            break
        commit = git.commit(cid)
        _, trailers, _ = parse_trailers(commit.message.decode("utf-8", "replace"))
        action = trailers.get("Action")
        if action == ERASED_ACTION:
            return Barrier(True, tuple(rewrote), tuple(forgot))
        if action == FORGET_ACTION:
            rewrote += [trailers["Rewrote"]] if trailers.get("Rewrote") else []
            forgot += [trailers["Forgot"]] if trailers.get("Forgot") else []
        cid = commit.parents[0] if commit.parents else None
    return Barrier(False, tuple(rewrote), tuple(forgot))
