"""Demo owners for ``wikimem serve --demo``: a few memories with history worth reviewing.

Everything is written through the host's real write paths (versioned
stores, :meth:`Owner.memorize` with a scripted model standing in for a chat
endpoint, batches with run ids), so the history reads exactly like a real
bot's: two characters, a good memorize run, and a bad one (``run id`` in
:data:`BAD_RUN`) that wrote a wrong fact and a wrong diary event — the
one a newcomer rolls back from the admin UI. Both characters are registered
(:data:`DEMO_CHARACTERS`), and Elaina keeps one memory of ``user:xnne`` in her
own layer, which only she recalls (the README tour's third step).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from wikimem.context import WriteContext

__all__ = ["seed_demo", "bad_run_hint", "DemoSeeded", "BAD_RUN", "DEMO_OWNERS", "DEMO_CHARACTERS"]

BAD_RUN = "run_demo_bad"
GOOD_RUN = "run_demo_good"
DEMO_OWNERS = ("user:xnne", "user:lumi", "user:sam")
DEMO_CHARACTERS = {"elaina": ("Elaina", "温柔、细心的咖啡馆常客，说话简短。"),
                   "lumi": ("Lumi", "A cheerful climbing buddy who keeps things light.")}


class _ScriptedLLM:
    """Answers memorize's one chat call with a fixed reply (the demo has no model)."""

    def __init__(self, entries: list[str]):
        self.reply = json.dumps([{"content": c} for c in entries], ensure_ascii=False)

    def chat(self, messages, **_: object) -> str:
        return self.reply


@dataclass(frozen=True)
class DemoSeeded:
    owners: tuple[str, ...]  # the demo owners in the data root
    bad_run: str
    created: bool
    others: int = 0          # owners in the data root that are not the demo's


def _memorize(owner, turn: str, entries: list[str], *, actor: str, run: str | None = None,
              source_conv: str | None = None, **kwargs) -> None:
    saved, owner.llm = owner.llm, _ScriptedLLM(entries)
    try:
        # the demo's bot writes under its persona's name (a memorize's actor is its context's)
        owner.memorize(turn, ctx=WriteContext(run=run, source_conv=source_conv, actor=actor), **kwargs)
    finally:
        owner.llm = saved


def _by(actor: str, conv: str | None = None, run: str | None = None) -> WriteContext:
    return WriteContext(actor=actor, source_conv=conv, run=run)


def _xnne(host) -> None:
    owner, _ = host.ensure_owner("user:xnne")
    vs, oid = owner.vstore, owner.id
    vs.add("preferences", "likes-the-sea", "喜欢海边，尤其是傍晚的海风。计划见 [[daily_life:beach-trip]]。",
           owner=oid, ctx=_by("Elaina", "conv_101"), ts="2026-07-18T09:00:00Z")
    vs.add("preferences", "tea", "每天早上喝乌龙茶，不加糖。", owner=oid, ctx=_by("Elaina", "conv_101"))
    vs.add("daily_life", "beach-trip", "八月想去青岛看海，[[people:sister]] 可能一起去。",
           owner=oid, ctx=_by("Elaina", "conv_102"))
    vs.add("people", "sister", "有一个妹妹，叫小雨，在上海读大学。", owner=oid, ctx=_by("Elaina", "conv_102"))
    vs.add("work", "job", "在一家咖啡馆做咖啡师。", owner=oid, ctx=_by("Elaina", "conv_103"))
    _memorize(owner, "user: 今天傍晚去海边散步了，风很大但是很舒服。\nassistant: 听起来很放松！",
              ["傍晚去海边散步，风很大，但心情很好，说很舒服。", "聊到八月的青岛之行，打算带妹妹小雨一起去。"],
              actor="Elaina", run=GOOD_RUN, source_conv="conv_104", date="2026-07-20", time="19:05")
    vs.diary_append("说最近工作很累，晚饭也没怎么吃，一句话都不想说。", date="2026-07-22", time="21:40",
                    owner=oid, ctx=_by("Elaina", "conv_105"))
    # The bad run: the model misread a joke and wrote the opposite of what is true.
    with vs.batch(_by("Elaina", "conv_106", run=BAD_RUN), message="memorize: 1 fact, 1 diary entry", action="memorize"):
        vs.store.add("preferences", "likes-the-sea", "其实讨厌海边，从来不去。", owner=oid, source_conv="conv_106")
        vs.diary.append("说自己讨厌大海，再也不想去青岛了。", date="2026-07-23", time="20:15", owner=oid,
                        source_conv="conv_106")
    # told Elaina alone: her own layer, which no other character recalls
    owner.diary_append("私下告诉 Elaina：在偷偷准备咖啡拉花比赛，还没告诉妹妹。", date="2026-07-24", time="22:10",
                       ctx=_by("Elaina", "conv_107"), character="elaina", channel="dm",
                       present=["user:xnne", "char:elaina"])


def _lumi(host) -> None:
    owner, _ = host.ensure_owner("user:lumi")
    vs, oid = owner.vstore, owner.id
    vs.add("preferences", "cats", "Has two cats, Miso and Tofu. See [[people:roommate]].",
           owner=oid, ctx=_by("Lumi", "conv_201"))
    vs.add("people", "roommate", "Shares a flat with Jonas, who is allergic to cats.",
           owner=oid, ctx=_by("Lumi", "conv_201"))
    vs.add("hobbies", "climbing", "Goes bouldering on Thursdays. Wants to try [[hobbies:lead-climbing]].",
           owner=oid, ctx=_by("Lumi", "conv_202"))
    _memorize(owner, "user: Miso knocked my coffee over again this morning.\nassistant: Oh no, poor laptop?",
              ["Miso knocked coffee over the laptop in the morning; the laptop survived, the mood did not."],
              actor="Lumi", source_conv="conv_203", date="2026-07-21", time="08:10")


def _sam(host) -> None:
    owner, _ = host.ensure_owner("user:sam")
    owner.vstore.add("preferences", "music", "Listens to jazz while cooking.", owner=owner.id, ctx=_by("Lumi"))


def seed_demo(host) -> DemoSeeded:
    """Write the demo owners into an empty data root; a root that has owners is left alone."""
    ids = [i for i in host.owner_ids() if i not in {f"char:{c}" for c in DEMO_CHARACTERS}]
    if ids:
        demo = tuple(i for i in DEMO_OWNERS if i in ids)
        return DemoSeeded(demo, BAD_RUN, False, len(ids) - len(demo))
    for character, (name, persona) in DEMO_CHARACTERS.items():
        host.characters.put(character, name=name, persona=persona, ctx=_by("demo"))
    _xnne(host)
    _lumi(host)
    _sam(host)
    return DemoSeeded(DEMO_OWNERS, BAD_RUN, True)


def bad_run_hint(host) -> str | None:
    """The start message's pointer to the demo's bad run, while it still stands (None once rolled back)."""
    from wikimem.errors import NotFound

    try:
        owner = host.owner(DEMO_OWNERS[0])
    except NotFound:
        return None
    if not owner.history(run=BAD_RUN, limit=1).entries or owner.review.run_rolled_back_by(BAD_RUN):
        return None
    return f"a bad memorize run to roll back: {BAD_RUN} (owner {owner.id}, History page)"
