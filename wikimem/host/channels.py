"""Channels (SPEC §11): group chats with several persons and characters; what a group turn leaves in each folder.

- :func:`parse_messages`, :class:`GroupTurn`: a group turn as sent (``[{speaker, content}]``), checked once;
- :class:`Channels` (held as ``host.channels``): :meth:`~Channels.turn` checks a request, :meth:`~Channels.memorize`
  files a turn now, :meth:`~Channels.submit` as a job (:mod:`wikimem.host.fleet.channeljob`);
- :class:`ChannelResult`: what a group turn wrote, person by person;
- :meth:`~Channels.context`: the channel's context across the persons present (:mod:`.roomcontext`).

Memorizing a turn asks the model once (:func:`wikimem.llm.extract` with the turn's persons: each element names its
``"person"``) and files what each person said or did into that person's folder only — the memorizing character's
layer, its facts proposed to the shared layer by its policy (:func:`~wikimem.host.memorizing.memorize_turn`, the
single-person code) — every diary entry with ``channel`` and ``present`` (every speaker, and the character). One run
id covers every folder, so ``GET /api/v1/runs?run=`` shows it and one bulk rollback of the run undoes it. A speaker
that is neither a person with a folder nor a registered character is reported (``unknown_speakers``), never written:
its words stay in the transcript as "unknown speaker N" (its id never reaches the model), and an element the model
gives a person outside the turn's known persons is dropped and reported. Design notes: docs/guides/group-chats.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from wikimem.context import WriteContext
from wikimem.errors import BadRequest, InvalidValue, LLMNotConfigured, NotFound, TooLarge
from wikimem.format import normalize_ts
from wikimem.limits import MAX_CHANNEL_MESSAGES, MAX_TURN_CHARS
from wikimem.naming import validate_channel_id, validate_character_id, validate_present
from wikimem.timeparse import resolve_tz

from .duplicates import check_duplicate, forget_turn
from .memorizing import MemorizeResult, memorize_turn, replayed, run_for
from .owner_ids import validate_owner_id
from .roomcontext import ChannelContext, channel_context

if TYPE_CHECKING:
    from wikimem.llm import Reply

    from .characters import Character, Characters
    from .fleet import HostJobs, Job
    from .owner import Owner

__all__ = ["Message", "GroupTurn", "ChannelResult", "Channels", "parse_messages", "CHARACTER_SPEAKER"]

CHARACTER_SPEAKER = "char:"  # a speaker id naming a character (char:<id>); any other speaker is a person's owner id


@dataclass(frozen=True)
class Message:
    """One message of a group turn: who said it (a person's owner id, or ``char:<id>``) and what."""

    speaker: str
    content: str


def parse_messages(value: Any) -> tuple[Message, ...]:
    """The messages of a group turn: a list of ``{"speaker", "content"}`` objects (400 when not that shape), each
    speaker an owner id or ``char:<character>`` and each content text (422), at most
    :data:`~wikimem.limits.MAX_CHANNEL_MESSAGES` messages and ``MAX_TURN_CHARS`` characters in all (413)."""
    if not isinstance(value, list) or not all(isinstance(m, dict) and set(m) == {"speaker", "content"}
                                              and all(isinstance(v, str) for v in m.values()) for m in value):
        raise BadRequest('messages must be a list of {"speaker": "<id>", "content": "<text>"} objects, speakers as '
                         'person owner ids (user:ann) or characters (char:kai)')
    if not value:
        raise InvalidValue("messages is empty: send the turn's messages")
    if len(value) > MAX_CHANNEL_MESSAGES:
        raise TooLarge(f"messages holds {len(value):,} messages; at most {MAX_CHANNEL_MESSAGES:,} make one turn")
    out = []
    for index, message in enumerate(value):
        speaker, content = message["speaker"], message["content"].strip()
        if speaker.startswith(CHARACTER_SPEAKER):
            validate_character_id(speaker[len(CHARACTER_SPEAKER):])
        else:
            validate_owner_id(speaker)
        if not content:
            raise InvalidValue(f"messages[{index}].content is empty")
        out.append(Message(speaker, content))
    size = sum(len(m.speaker) + len(m.content) + 2 for m in out)
    if size > MAX_TURN_CHARS:
        raise TooLarge(f"the turn is {size:,} characters long; at most {MAX_TURN_CHARS:,} are sent to the model")
    return tuple(out)


@dataclass(frozen=True)
class GroupTurn:
    """A group turn, checked: where it was said, its messages, the character that memorizes it (its id)."""

    channel: str
    messages: tuple[Message, ...]
    character: str

    @property
    def speakers(self) -> tuple[str, ...]:
        """Every speaker, in the order they first spoke."""
        return tuple(dict.fromkeys(m.speaker for m in self.messages))

    @property
    def persons(self) -> tuple[str, ...]:
        """The speakers that name persons (owner ids): whom a caller must be allowed to write (known or not)."""
        return tuple(s for s in self.speakers if not s.startswith(CHARACTER_SPEAKER))

    @property
    def present(self) -> tuple[str, ...]:
        """Who was there: every speaker, then the memorizing character (bounded: ``MAX_PRESENT``, else 422)."""
        return validate_present([*self.speakers, CHARACTER_SPEAKER + self.character])

    def to_params(self) -> dict[str, Any]:
        """The turn as a job keeps it (:meth:`Channels.turn` reads it back)."""
        return {"channel": self.channel, "character": self.character,
                "messages": [{"speaker": m.speaker, "content": m.content} for m in self.messages]}


@dataclass
class ChannelResult:
    """What a group turn wrote: per known person (``persons``: that person's entries, facts, writes, proposal,
    commit), the run over all of them, the speakers not written (``unknown_speakers``), what the model said that
    was dropped (an element naming no person of the turn, a bad name), and whether it all was a replay."""

    channel: str
    character: str
    run: str
    present: list[str]
    persons: list[dict[str, Any]] = field(default_factory=list)
    unknown_speakers: list[str] = field(default_factory=list)
    dropped: list[dict[str, Any]] = field(default_factory=list)

    @property
    def replayed(self) -> bool:
        """Whether every folder written answered with the result of an earlier request (a retry)."""
        written = [p for p in self.persons if p.get("commit")]
        return bool(written) and all(p.get("replayed") for p in written)

    def to_dict(self) -> dict[str, Any]:
        return {"channel": self.channel, "character": self.character, "run": self.run, "present": self.present,
                "persons": self.persons, "unknown_speakers": self.unknown_speakers, "dropped": self.dropped,
                "replayed": self.replayed}


class Channels:
    """The host's group chats (see the module's docstring); built with the host's owner lookup, its characters,
    its chat model and its jobs."""

    def __init__(self, *, owner: Callable[[str], Owner], characters: Characters, llm: Any = None,
                 jobs: HostJobs | None = None, default_tz: str | None = None):
        self._owner = owner
        self._characters = characters
        self.llm = llm
        self._jobs = jobs
        self.default_tz = default_tz

    def turn(self, channel: Any, messages: Any, character: Any) -> GroupTurn:
        """The group turn a request sends, checked (nothing looked up but the character: 404 when it is not
        registered); who was present is bounded here too."""
        validate_channel_id(channel)
        turn = GroupTurn(channel, parse_messages(messages), self._characters.resolve(character).id)
        turn.present  # noqa: B018  (refused now: more ids than a present list holds)
        return turn

    def speakers(self, turn: GroupTurn) -> tuple[list[Owner], list[str]]:
        """The persons of the turn that have a folder, and the speakers that are unknown (a person without a folder,
        a character that is not registered)."""
        known: list[Owner] = []
        unknown: list[str] = []
        for speaker in turn.speakers:
            if speaker.startswith(CHARACTER_SPEAKER):
                if not self._characters.exists(speaker[len(CHARACTER_SPEAKER):]):
                    unknown.append(speaker)
                continue
            try:
                known.append(self._owner(speaker))
            except NotFound:
                unknown.append(speaker)
        return known, unknown

    @staticmethod
    def request(turn: GroupTurn, *, ctx: WriteContext | None = None, prompt: str | None = None,
                ts: str | None = None, tz: str | None = None) -> WriteContext:
        """The context of a group turn, bound to what a retry with its key must repeat (the same in every folder)."""
        given = sorted((k, v) for k, v in (("ts", ts), ("tz", tz)) if v is not None)
        return WriteContext.of(ctx).bound("channel-memorize", turn.to_params(), prompt, given)

    def memorize(self, turn: GroupTurn, *, ctx: WriteContext | None = None, prompt: str | None = None,
                 ts: str | None = None, tz: str | None = None, reply: dict | None = None,
                 remember: Callable[[dict], dict] | None = None) -> ChannelResult:
        """Ask the model once what the turn leaves, and file each person's part in that person's folder.

        ``ts`` (default now) is when the turn was said; ``tz`` the calendar of its entries (default: each person's
        own). ``reply``: the model's answer decided already (a job's step run again), else the model is asked and
        its answer handed to ``remember``, which returns the one to write (a job keeps the first it was given, so a
        step cut short between two folders ends as it began). Every folder is written with the run id and the
        idempotency key of ``ctx``: a retry with the same key replays the folders written already (each keeps
        which persons the first answer reached), asks the model again only for folders it had not reached yet,
        and writes no other.
        """
        if self.llm is None:
            raise LLMNotConfigured("memorize needs a chat endpoint: set WIKIMEM_LLM_URL and WIKIMEM_LLM_MODEL")
        ctx = self.request(turn, ctx=ctx, prompt=prompt, ts=ts, tz=tz)
        ctx = WriteContext.of(ctx, run=run_for(ctx))
        who = self._characters.resolve(turn.character)
        known, unknown = self.speakers(turn)
        earlier = {p.id: found for p in known if (found := _earlier(p, ctx, who.id)) is not None}
        transcript = render_transcript(turn, who, unknown)
        for person in known:  # the same turn moments ago, without a key: 409, nothing asked or written
            check_duplicate(person, f"channel {turn.channel}\n{transcript}", ctx, who.id, prompt)
        told = normalize_ts(ts)
        planned = _planned(earlier.values())
        answer = reply_of({})
        if planned is None or not set(planned) <= set(earlier):
            if reply is None:
                reply = self._ask(transcript, who, [p.id for p in known], told, tz, prompt)
                reply = remember(reply) if remember is not None else reply
            answer = reply_of(reply)
        if planned is None:  # the persons this answer reaches, told to each folder written
            named = {n.person for n in answer.diary} | {f.person for f in answer.facts}
            planned = [p.id for p in known if p.id in named]
        result = ChannelResult(turn.channel, who.id, ctx.run or "", list(turn.present),
                               unknown_speakers=unknown, dropped=list(answer.dropped))
        stamp = {"ts": told, "source_conv": ctx.source_conv, "turn": transcript, "channel": turn.channel,
                 "present": list(turn.present)}
        reached = {"channel": turn.channel, "persons": planned}
        for person in known:
            if person.id in earlier:
                result.persons.append(_person_result(person.id, earlier[person.id]))
            elif person.id in planned:
                mine = _part(answer, person.id)
                done = memorize_turn(person, mine, character=who, facts_policy=person.memorize_facts, ctx=ctx,
                                     stamp={**stamp, "tz": person.time_zone(tz)}, turn=reached)
                result.persons.append(_person_result(person.id, done))
            else:
                result.persons.append(_person_result(person.id, None))
        return result

    def context(self, channel: Any, present: Any, *, character: str | None = None, **options: Any) -> ChannelContext:
        """The channel's context for who is ``present``, as ``character`` recalls it: every present person's folder
        asked with the same room, under one limit and one budget (:func:`~wikimem.host.roomcontext.channel_context`;
        ``options``: ``query``, ``limit``, ``budget_tokens``, ``budget_strict``, ``explain``, ``days``)."""
        who = self._characters.resolve(character).id if character is not None else None
        return channel_context(self._owner, channel, present, character=who, **options)

    def forget(self, turn: GroupTurn, *, ctx: WriteContext, prompt: str | None = None) -> None:
        """Drop the records of a turn whose memorize failed for good (a job): a new request for it is no duplicate."""
        known, unknown = self.speakers(turn)
        transcript = render_transcript(turn, self._characters.resolve(turn.character), unknown)
        for person in known:
            forget_turn(person, f"channel {turn.channel}\n{transcript}", ctx, turn.character, prompt)

    def _ask(self, transcript: str, who: Character, persons: list[str], ts: str, tz: str | None,
             prompt: str | None) -> dict:
        """The model's answer over the turn, as data (nothing is asked when no speaker has a folder)."""
        from wikimem.llm import extract

        if not persons:
            return {"diary": [], "facts": [], "dropped": []}
        today = datetime.fromisoformat(ts).astimezone(resolve_tz(tz or self.default_tz)).date()
        answer = extract(self.llm, transcript, character=who.name, persona=who.persona or "", today=today,
                         prompt=prompt, persons=persons)
        return asdict(answer)

    def submit(self, turn: GroupTurn, *, ctx: WriteContext | None = None, tenant: str = "",
               request_id: str | None = None, prompt: str | None = None, ts: str | None = None,
               tz: str | None = None) -> tuple[Job, bool]:
        """Memorize a group turn in the background: ``(job, created)``; the same idempotency key is the same job.
        Checked now (a chat endpoint, the turn); ``ts`` and the run id are fixed at submission."""
        from wikimem.host.fleet import submit_channel_memorize

        if self.llm is None or self._jobs is None:
            raise LLMNotConfigured("memorize needs a chat endpoint: set WIKIMEM_LLM_URL and WIKIMEM_LLM_MODEL")
        ctx = WriteContext.of(ctx)
        given = {"run": ctx.run, "actor": ctx.actor, "source_conv": ctx.source_conv, "staged": ctx.staged or None}
        if ctx.idempotency_key is not None:  # bound as a synchronous request binds it: the same key replays
            given["fingerprint"] = self.request(turn, ctx=ctx, prompt=prompt, ts=ts, tz=tz).fingerprint
        job, created = submit_channel_memorize(self._jobs.store, turn.to_params(), persons=list(turn.persons),
                                               key=ctx.idempotency_key, tenant=tenant, request_id=request_id,
                                               prompt=prompt, ts=ts, tz=tz, **given)
        self._jobs.start().wake()
        return job, created


def render_transcript(turn: GroupTurn, who: Character, unknown: list[str]) -> str:
    """The turn as the model reads it: one ``speaker: text`` line per message; the memorizing character is "you",
    another character shows its id, and a speaker the host does not know is "unknown speaker N" (its id is not
    sent: nothing is filed for it, and the model has no name to file it under)."""
    labels = {f"{CHARACTER_SPEAKER}{who.id}": f"{CHARACTER_SPEAKER}{who.id} ({who.name}, you)"}
    labels.update({speaker: f"unknown speaker {n}" for n, speaker in enumerate(unknown, 1)})
    return "\n".join(f"{labels.get(m.speaker, m.speaker)}: {m.content}" for m in turn.messages)


def _earlier(person: Owner, ctx: WriteContext, layer: str) -> MemorizeResult | None:
    """What an earlier request with this idempotency key wrote in ``person``'s folder (None: nothing, or no key);
    checks before anything is asked that the character's layer may be written there (its quota)."""
    target, keyed = person.target(ctx, layer)
    if ctx.idempotency_key is None:
        return None
    found = target.replay(ctx.idempotency_key, "memorize", target.request_of(keyed, "memorize"))
    return None if found is None else replayed(found)


def _planned(earlier: Iterable[MemorizeResult]) -> list[str] | None:
    """The persons the first answer of a retried turn reached, as its folders written already say (None: none)."""
    for found in earlier:
        if found.turn is not None and isinstance(found.turn.get("persons"), list):
            return [str(p) for p in found.turn["persons"]]
    return None


def _part(answer: Reply, person: str) -> Reply:
    """One person's part of the model's answer."""
    from wikimem.llm import Reply

    return Reply([n for n in answer.diary if n.person == person], [f for f in answer.facts if f.person == person])


def _person_result(person: str, done: MemorizeResult | None) -> dict[str, Any]:
    """What a group turn wrote in one person's folder (nothing: empty lists, no commit)."""
    out: dict[str, Any] = {"person": person, "entries": [], "facts": [], "writes": [], "proposal": None,
                           "commit": None, "replayed": False}
    if done is not None:
        out.update({k: v for k, v in done.to_dict().items() if k in out})
    return out


def reply_of(data: dict) -> Reply:
    """The model's answer back from its data (:meth:`Channels.memorize`'s ``reply``)."""
    from wikimem.llm import Fact, Note, Reply

    return Reply([Note(**n) for n in data.get("diary") or []], [Fact(**f) for f in data.get("facts") or []],
                 list(data.get("dropped") or []))
