"""Demo memory for the browser tests, written through the library with run ids.

One owner (``user:xnne``) gets a small wiki with links (one dangling), a
diary, a good memorize run, a bad one (``run_bad``) to roll back, one
(``run_stale``) whose item changed again since, and an
item whose content is a ``<script>`` that must never execute. A second
owner makes the owners list worth searching.
"""

from __future__ import annotations

from dataclasses import dataclass

from wikimem.context import WriteContext

OWNER = "user:xnne"
OTHER = "user:lumi"
BAD_RUN = "run_bad"
GOOD_RUN = "run_good"
# A run whose item was edited again afterwards: rolling it back is a conflict.
STALE_RUN = "run_stale"
# Every place memory content reaches the page gets this; running it would set the flag.
SCRIPT = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
BAD_WORDS = "hates the sea"
SEA = "喜欢海边，尤其是傍晚的海风。See [[daily_life:beach-trip-plan]]."


@dataclass(frozen=True)
class Seeded:
    owner: str
    bad_run: str
    good_run: str
    stale_run: str
    first_commit: str


def seed(host) -> Seeded:
    """Write the demo memory into ``host`` (a :class:`wikimem.host.Host`)."""
    owner, _ = host.ensure_owner(OWNER)
    vs = owner.vstore
    first = vs.add("preferences", "likes-the-sea", SEA,
                   owner=OWNER, ts="2026-07-18T09:00:00Z",
                   ctx=WriteContext(source_conv="conv_1", actor="Elaina")).commit
    vs.add("daily_life", "beach-trip-plan", "Plans a trip to the beach in August. [[people:sister]] may come.",
           owner=OWNER, ctx=WriteContext(source_conv="conv_1", actor="Elaina"))
    vs.add("preferences", "tea", "Drinks oolong tea every morning.", owner=OWNER, ctx=WriteContext(actor="Elaina"))
    vs.add("notes", "odd-note", SCRIPT, owner=OWNER, ctx=WriteContext(source_conv="conv_x", actor="Elaina"))
    vs.diary_append(SCRIPT, date="2026-07-19", time="21:00", owner=OWNER, ctx=WriteContext(actor="Elaina"))
    with vs.batch(WriteContext(run=GOOD_RUN, actor="Elaina", source_conv="conv_2"), message="memorize 2 entries"):
        vs.diary.append("Talked about the sea at sunset; wants to see it again.", date="2026-07-20", time="18:30",
                        owner=OWNER, source_conv="conv_2")
        vs.diary.append("今天去了海边散步，心情很好。", date="2026-07-20", time="19:05",
                        owner=OWNER, source_conv="conv_2")
    vs.add("work", "job", "Works as a barista.", owner=OWNER,
           ctx=WriteContext(run=STALE_RUN, actor="Elaina", source_conv="conv_0"))
    vs.add("work", "job", "Works as a teacher now.", owner=OWNER, ctx=WriteContext(actor="operator"))
    with vs.batch(WriteContext(run=BAD_RUN, actor="Elaina", source_conv="conv_3"), message="memorize: a wrong memory"):
        vs.store.add("preferences", "likes-the-sea", f"Actually {BAD_WORDS} and never goes there.",
                     owner=OWNER, source_conv="conv_3")
        vs.diary.append(f"Said they {BAD_WORDS}.", date="2026-07-21", time="10:00", owner=OWNER,
                        source_conv="conv_3")
    other, _ = host.ensure_owner(OTHER)
    other.vstore.add("preferences", "cats", "Has two cats.", owner=OTHER, ctx=WriteContext(actor="Lumi"))
    return Seeded(OWNER, BAD_RUN, GOOD_RUN, STALE_RUN, first)
