"""``include_staged``: one build per owner at a time, kept fresh incrementally, and always what a fresh build gives.

Real repositories; the reference is an index built from scratch over :meth:`Staging.overlay` (the approved
memory with every staged run applied), compared after every step of a sequence of writes to ``main`` and to
staged runs, approvals, discards and diary appends.
"""

from __future__ import annotations

import threading

import pytest

from wikimem.context import WriteContext
from wikimem.host import make_host
from wikimem.recall import MemoryIndex

QUERIES = ["tea", "the sea", "lighthouse trip", "violin lessons", "bread and cheese", "2026-07-21 walk"]
DATE = "2026-07-21"


def staged(run: str) -> WriteContext:
    return WriteContext(run=run, actor="memorize-v7", staged=True)


def answer(result) -> list[tuple]:
    return [(h.item.file, h.item.name, h.item.content, round(h.score, 6), h.staged) for h in result.items]


def reference(owner, query: str, **kwargs) -> list[tuple]:
    """What a retrieve including the staged runs answers when its index is built from scratch now."""
    overlay = owner.staging.overlay()
    if not overlay.key[1]:  # no staged run: the live index, nothing staged
        return [(*row[:-1], False) for row in answer(owner.retrieve(query, **kwargs))]
    index = MemoryIndex(overlay.snapshot, **(owner.recall.kwargs() if owner.recall is not None else {}))
    index.reference = True  # (built here, not by the owner)
    result = index.retrieve(query, tz=owner._tz(None), **kwargs)
    for hit in result.items:
        item = hit.item
        key = ((None, "wiki", item.file, item.name) if hit.kind == "wiki"
               else (None, "diary", item.file, item.name, item.content))
        hit.staged = key in overlay.staged
    return answer(result)


def check(owner) -> None:
    for query in QUERIES:
        for diary in ("window", "all"):
            got = answer(owner.retrieve(query, include_staged=True, diary=diary, limit=20))
            assert got == reference(owner, query, diary=diary, limit=20), (query, diary)


@pytest.fixture
def owner(tmp_path):
    host = make_host(tmp_path / "data")
    made = host.create_owner("user:ann")
    made.add("preferences", "tea", "Drinks green tea by the sea.")
    made.add("hobbies", "violin", "Takes violin lessons on Sundays.")
    made.diary_append("Walked by the sea.", date=DATE, time="09:00")
    yield made
    host.start_jobs().stop()


def test_the_staged_view_stays_equal_to_a_fresh_build_through_every_kind_of_change(owner):
    owner.add("preferences", "tea", "Now drinks black tea.", ctx=staged("run_a"))
    owner.add("food", "bread", "Bakes bread and eats cheese.", ctx=staged("run_a"))
    owner.diary_append("Planned a lighthouse trip.", date=DATE, time="10:00", ctx=staged("run_b"))
    check(owner)  # the first build
    owner.add("hobbies", "violin", "Stopped the violin lessons.")  # main, a file no run touches
    check(owner)
    owner.add("preferences", "coffee", "Never drinks coffee by the sea.")  # main, a file a run touches
    check(owner)
    owner.add("food", "cheese", "Loves cheese, not bread.", ctx=staged("run_b"))  # a run moves on
    check(owner)
    owner.diary_append("Swam in the sea.", date=DATE, time="11:00")  # main's diary
    check(owner)
    owner.remove("preferences", "tea")  # main removes what a run changes
    check(owner)
    owner.approve_staged("run_b", ctx=WriteContext(actor="alice"))  # a run settles: its paths planned again
    check(owner)
    owner.add("lighthouse", "trip", "A lighthouse trip in July.", ctx=staged("run_c"))
    owner.discard_staged("run_a", ctx=WriteContext(actor="bob"))
    check(owner)
    owner.discard_staged("run_c", ctx=WriteContext(actor="bob"))  # no staged run left: the live index
    check(owner)
    owner.add("preferences", "tea", "Tea again, by the sea.", ctx=staged("run_d"))  # and a new one after
    check(owner)


def _call(owner, results: list, errors: list) -> None:
    try:
        results.append(answer(owner.retrieve("tea", include_staged=True)))
    except Exception as exc:  # (a failure must fail the test, not vanish in a thread)
        errors.append(exc)


def test_after_the_first_build_a_main_write_rebuilds_nothing_and_six_callers_share_one_update(owner, monkeypatch):
    for r in range(5):
        owner.apply_ops([{"op": "add", "file": f"staged{r}", "name": f"i{i}", "content": f"staged note {r} {i} sea"}
                         for i in range(30)], ctx=staged(f"run_{r}"))
    owner.retrieve("sea", include_staged=True)  # the first build
    builds: list[int] = []
    rebuild = MemoryIndex.rebuild

    def counted(self):
        if not getattr(self, "reference", False):  # (the reference's own fresh index builds, of course)
            builds.append(1)
        return rebuild(self)

    monkeypatch.setattr(MemoryIndex, "rebuild", counted)
    for n in range(3):
        owner.add("preferences", f"p{n}", f"one more line {n} about tea")
        results: list = []
        errors: list = []
        threads = [threading.Thread(target=_call, args=(owner, results, errors)) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors and len(results) == 6 and all(r == results[0] for r in results)
        assert results[0] == reference(owner, "tea")
    assert builds == []  # no index was built again: the view caught up with the files that changed
