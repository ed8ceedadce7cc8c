"""Memorize one turn (SPEC §11): one model call that returns the diary entries and the facts worth keeping, written
as one run — into the memorizing character's layer, the facts also to the shared layer by the character's policy.

- as a character (registered, :mod:`wikimem.host.characters`): its diary entries and facts go to its layer of the
  person's folder; its facts also reach the shared layer as a proposal (a staged run on it, ``shared_writes:
  staged``, the default), directly (``direct``) or not at all (``none``);
- without one: both go to the shared layer, the facts as the host says (``WIKIMEM_MEMORIZE_FACTS``: ``direct``,
  ``staged`` or ``none``).

``channel`` and ``present`` (where the turn was said, who was there; :func:`check_room`) go on every diary entry.
One run id covers everything the turn wrote (a proposal is a commit of the same run on ``staged/<run>``), so one
rollback (and discarding the proposal) undoes it. What the model answered that could not be written (a bad name,
a fact for a file no memory file may have) is dropped and reported, never written.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from wikimem.context import WriteContext, digest, new_run_id
from wikimem.models import DiaryItem, RecallItem
from wikimem.naming import validate_channel_id, validate_present

if TYPE_CHECKING:
    from wikimem.llm import Note, Reply
    from wikimem.versioned import Target

    from .characters import Character
    from .owner import Owner

__all__ = ["MemorizeResult", "FACT_POLICIES", "memorize_turn", "replayed", "check_room", "run_for"]

FACT_POLICIES = ("direct", "staged", "none")  # where facts reach the shared layer (a character's shared_writes too)


@dataclass
class MemorizeResult:
    """What :meth:`Owner.memorize` wrote (unpacks as ``entries, run, commit``): the diary entries, the facts, each
    write with its layer (``writes``), what the model said that was dropped, and the proposal to the shared layer
    (``{"run", "commit", "facts"}``) when the facts went on probation."""

    entries: list[DiaryItem] = field(default_factory=list)
    run: str = ""
    commit: str | None = None
    replayed: bool = False
    facts: list[RecallItem] = field(default_factory=list)
    writes: list[dict[str, Any]] = field(default_factory=list)
    dropped: list[dict[str, Any]] = field(default_factory=list)
    proposal: dict[str, Any] | None = None
    character: str | None = None
    # A group turn's write (channels.py): its channel and the persons its answer reached (ids only), kept with
    # each folder's result so that a retry knows which folders the first answer was for.
    turn: dict[str, Any] | None = None

    def __iter__(self):
        return iter((self.entries, self.run, self.commit))

    def to_dict(self) -> dict[str, Any]:
        out = {"entries": [asdict(e) for e in self.entries], "facts": [asdict(f) for f in self.facts],
               "writes": self.writes, "dropped": self.dropped, "proposal": self.proposal,
               "character": self.character, "run": self.run, "commit": self.commit, "replayed": self.replayed}
        return out if self.turn is None else {**out, "turn": self.turn}

    def stored(self) -> dict[str, Any]:
        """What a retry with the same idempotency key replays."""
        return {k: v for k, v in self.to_dict().items() if k not in ("commit", "replayed")}


def replayed(stored: dict) -> MemorizeResult:
    """The result a retry replays (results stored before facts carry entries and the run only)."""
    return MemorizeResult([DiaryItem(**e) for e in stored.get("entries", [])], stored.get("run", ""),
                          stored.get("commit"), True, [RecallItem(**f) for f in stored.get("facts", [])],
                          list(stored.get("writes", [])), list(stored.get("dropped", [])), stored.get("proposal"),
                          stored.get("character"), stored.get("turn"))


def check_room(channel: object = None, present: object = None) -> dict[str, Any]:
    """A memorize's ``channel`` and ``present`` as keyword arguments (only those given), validated by the naming
    rules (:class:`~wikimem.errors.InvalidName`, 422) before anything is asked or written."""
    room: dict[str, Any] = {}
    if channel is not None:
        room["channel"] = validate_channel_id(channel)
    if present is not None:
        room["present"] = list(validate_present(present))
    return room


def run_for(ctx: WriteContext) -> str:
    """The run id of a memorize whose context names none: from its idempotency key (a retry lands on the same run
    and staged branch), else a new one."""
    return ctx.run or (f"run_{digest('staged', ctx.idempotency_key)[:20]}" if ctx.idempotency_key else new_run_id())


def _where(layer: str | None) -> str:
    return "character" if layer is not None else "shared"


def memorize_turn(owner: Owner, reply: Reply, *, character: Character | None, facts_policy: str,
                  ctx: WriteContext, stamp: dict[str, Any], turn: dict[str, Any] | None = None) -> MemorizeResult:
    """Write what ``reply`` holds (asked of the model already, outside the owner's lock) as one run: the main
    commit (the character's layer; the shared layer for a direct policy or without a character) and, for a staged
    policy, a proposal commit of the same run on the shared layer's staged branch. ``stamp``: the turn's ``ts``,
    ``tz`` and ``source_conv`` for every entry and fact, ``channel`` and ``present`` for every diary entry;
    ``turn``: the group turn it is part of (:attr:`MemorizeResult.turn`)."""
    layer = character.id if character is not None else None
    policy = (character.shared_writes if character is not None else facts_policy) or "staged"
    target, ctx = owner.target(ctx, layer)  # main, or the run's staged branch when the whole write is on probation
    result = MemorizeResult(run=ctx.run or "", dropped=list(reply.dropped),
                            character=character.id if character is not None else None, turn=turn)
    if reply.facts and policy == "staged" and not ctx.staged:
        result.proposal = _propose(owner, reply, ctx, stamp)
    # (a run on probation as a whole carries its shared facts on its own branch: they are a proposal already)
    shared_facts = reply.facts if policy == "direct" or (policy == "staged" and ctx.staged) else []
    stored = _write_main(owner, target, reply, layer, shared_facts, ctx, stamp, result)
    if stored is not None:  # a keyed retry of a turn written already
        return replayed(stored)
    if result.proposal is not None:
        result.writes += [{"kind": "fact", "layer": "shared", "staged": True, "file": f["file"], "name": f["name"]}
                          for f in result.proposal["facts"]]
    return result


def _write_main(owner: Owner, target: Target, reply: Reply, layer: str | None, shared_facts: list,
                ctx: WriteContext, stamp: dict[str, Any], result: MemorizeResult) -> dict | None:
    """The turn's commit (on ``target``: main, or its run's staged branch) into ``result``; or the stored result
    of a keyed retry (nothing written)."""
    shared = target.with_layer(None)
    notes = len(reply.diary)
    message = f"memorize {notes} diary entr{'y' if notes == 1 else 'ies'}"
    if reply.facts:
        message += f", {len(reply.facts)} fact{'' if len(reply.facts) == 1 else 's'}"
    if layer:
        message += f" in {layer}"

    def write() -> dict | None:
        with target.batch(ctx, message=message, kind="memorize", action="memorize") as b:
            if b.replay is not None:
                return b.replay
            result.entries = [target.diary.append(n.content, date=_day(n, stamp), time=n.time or stamp.get("time"),
                                                  owner=owner.id, source_conv=stamp.get("source_conv"),
                                                  ts=stamp.get("ts"), tz=stamp.get("tz"), channel=stamp.get("channel"),
                                                  present=stamp.get("present")) for n in reply.diary]
            result.writes = [{"kind": "diary", "layer": _where(layer), "staged": ctx.staged, "date": e.date,
                              "time": e.time} for e in result.entries]
            for store_layer, facts in ((layer, reply.facts), (None, shared_facts if layer is not None else [])):
                store = target.store if store_layer == layer else shared.store
                for fact in facts:
                    item = store.add(fact.file, fact.name, fact.content, owner=owner.id, ts=stamp.get("ts"),
                                     source_conv=stamp.get("source_conv"))
                    if store_layer == layer:
                        result.facts.append(item)
                    result.writes.append({"kind": "fact", "layer": _where(store_layer), "staged": ctx.staged,
                                          "file": item.file, "name": item.name})
            b.result = result.stored()
        result.commit = b.commit
        return None

    return owner.write_attempts(write)


def _day(note: Note, stamp: dict[str, Any]) -> str | None:
    """The day an entry goes on: the model's, the request's, else the day its event happened (its own words,
    then the turn's: "yesterday" told at 01:00 is the day before), else the day it was told."""
    if note.date or stamp.get("date"):
        return note.date or stamp.get("date")
    from wikimem.llm import event_date

    return event_date(note.content, ts=stamp.get("ts"), tz=stamp.get("tz"), turn=stamp.get("turn"))


def _propose(owner: Owner, reply: Reply, ctx: WriteContext, stamp: dict[str, Any]) -> dict[str, Any]:
    """The facts as a proposal to the shared layer: a commit of the run on its staged branch (its own idempotency
    key: a retry finds the proposal it made)."""
    target = owner.staging.branch(ctx.run or "")
    key = f"{ctx.idempotency_key}:proposal" if ctx.idempotency_key else None
    proposal = replace(ctx, staged=True, idempotency_key=key[:200] if key else None, if_match=None,
                       fingerprint=None).bound("memorize-proposal", [asdict(f) for f in reply.facts])
    facts: list[dict[str, Any]] = []

    def write() -> str | None:
        with target.batch(proposal, message=f"propose {len(reply.facts)} fact(s) to the shared layer",
                          kind="memorize-proposal", action="memorize") as b:
            if b.replay is not None:
                facts.extend(b.replay.get("facts") or [])
                return b.commit
            for fact in reply.facts:
                item = target.store.add(fact.file, fact.name, fact.content, owner=owner.id, ts=stamp.get("ts"),
                                        source_conv=stamp.get("source_conv"))
                facts.append({"file": item.file, "name": item.name, "content": item.content})
            b.result = {"facts": facts}
        return b.commit

    commit = owner.write_attempts(write)
    return {"run": ctx.run, "commit": commit, "facts": facts}
