"""What an idempotent request answered, derived again from its commit when the stored result is gone.

The history index keeps each keyed request's result, but the index is a
cache: deleted, damaged or rebuilt from git it knows the key (from the
commit's ``Wikimem-Idempotency-Key`` trailer) and not the result. A replay
must still answer, never fail: the commit itself holds what was written —
its journal trailers name each mutation, its tree holds the items and the
diary entries it added.

What cannot be derived: an item a batch added and removed again answers
``item: null`` (the commit no longer has it), and a remove of an item that
did not exist (no mutation, no journal line) is not listed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict

from wikimem.format import entry_key, memory_path, parse_day, parse_wiki
from wikimem.models import DiaryItem

from ..messages import parse_trailers
from ..objects import GitRepo

__all__ = ["rebuild_result"]


def _added_entries(git: GitRepo, commit) -> list[DiaryItem]:
    """The diary entries the commit added, day by day, in file order."""
    parent_tree = git.commit_tree(commit.parents[0]) if commit.parents else None
    out: list[DiaryItem] = []
    for path in sorted(git.changed_paths(parent_tree, commit.tree)):
        kind = memory_path(path)
        if kind is None or kind[0] != "diary":
            continue
        before = Counter(map(entry_key, parse_day(git.blob_at(parent_tree, path), kind[1])))
        for entry in parse_day(git.blob_at(commit.tree, path), kind[1]):
            if before[entry_key(entry)] > 0:
                before[entry_key(entry)] -= 1
            else:
                out.append(entry)
    return out


def _item(git: GitRepo, tree, file: str | None, name: str | None) -> dict | None:
    if file is None or name is None:
        return None
    found = [i for i in parse_wiki(git.blob_at(tree, f"wiki/{file}.md"), file) if i.name == name]
    return asdict(found[0]) if found else None


def _op_results(git: GitRepo, commit, records: list[dict], added: list[DiaryItem]) -> list[dict]:
    """The results of a batch of ops, one per journal record, as the batch answered them."""
    entries = iter(added)
    out: list[dict] = []
    for rec in records:
        action = rec.get("action")
        if action in ("add", "update"):
            out.append({"op": "add", "item": _item(git, commit.tree, rec.get("file"), rec.get("item"))})
        elif action == "remove":
            out.append({"op": "remove", "file": rec.get("file"), "name": rec.get("item"), "removed": True})
        elif action == "diary":
            entry = next(entries, None)
            out.append({"op": "diary", "entry": asdict(entry) if entry else None})
    return out


def rebuild_result(git: GitRepo, commit_id: str, kind: str | None) -> dict:
    """The result a request of ``kind`` (``add f/n``, ``diary``, ``memorize``, ``batch``…) answered with
    ``commit_id``."""
    commit = git.commit(commit_id.encode())
    _, trailers, records = parse_trailers(commit.message.decode("utf-8", "replace"))
    kind = kind or ""
    added = _added_entries(git, commit) if kind in ("diary", "diary-tool", "memorize", "batch") else []
    first = asdict(added[0]) if added else None
    if kind.startswith("add ") and records:
        return {"value": _item(git, commit.tree, records[0].get("file"), records[0].get("item")),
                "created": records[0].get("action") == "add"}
    if kind.startswith("remove "):
        return {"value": True}
    if kind == "diary":
        return {"value": first}
    if kind == "diary-tool":
        return {"entry": first}
    if kind == "memorize":
        return {"entries": [asdict(e) for e in added], "run": trailers.get("Run", "")}
    if kind == "batch":
        return {"results": _op_results(git, commit, records, added)}
    return {}
