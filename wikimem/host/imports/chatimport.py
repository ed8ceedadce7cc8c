"""A chat becomes a person's memory with a character: the preview (:func:`preview_chat`), the job that memorizes
it turn by turn as one run (:func:`submit_chat`, :func:`chat_handler`), or — without a chat model — the
transcript kept as a conversation file of the character's layer (:func:`keep_transcript`); and undoing it
(:func:`roll_back`).

The job is one step over every turn, in order (a later turn may change a fact an earlier one wrote). Each turn
is memorized under the idempotency key ``<job>/<step>/turn/<n>``: a step run again after its process died
replays the turns done (no model call, no second write) and goes on from the first one not done. Every turn's
commits carry the job's run id and the actor ``import``; its diary entries land on the day of its
``send_date`` (the turn's ``ts``), in the person's time zone.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import tzinfo
from typing import TYPE_CHECKING, Any

from wikimem.context import WriteContext
from wikimem.errors import NotFound, StoreBusy
from wikimem.format import normalize_content
from wikimem.limits import MAX_CONTENT_CHARS, MAX_FILE_BYTES

from ..fleet import IMPORT_CHAT, Job, JobStore, MemorizeRetry, RetryLater, Step
from .chats import Chat

if TYPE_CHECKING:
    from ..characters import Character
    from ..owner import Owner

__all__ = ["ChatPreview", "preview_chat", "submit_chat", "chat_handler", "keep_transcript", "roll_back",
           "transcript_items", "TOKENS_PER_WORD", "OUTPUT_TOKENS"]

TOKENS_PER_WORD = 1.3  # est_tokens counts words; a model's tokenizer counts about this many per word
OUTPUT_TOKENS = 120  # what one memorize reply is budgeted (a small JSON object; most turns keep nothing)
PROGRESS_EVERY = 10  # turns between two progress reports of a running import


@dataclass
class ChatPreview:
    """What importing a chat would do, before it starts: its turns and days, what is left out, what it costs."""

    owner: str
    character: str
    turns: int
    messages: int
    system: int
    swipes: int
    days: list[str]
    model: bool  # a chat model is configured: the chat can be memorized
    llm_calls: int
    tokens: dict[str, int]
    cut: list[int] = field(default_factory=list)  # turns longer than a memorize turn, cut
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["first_day"], out["last_day"] = (self.days[0], self.days[-1]) if self.days else (None, None)
        if not self.model:
            out["offer"] = ("no chat model is configured (WIKIMEM_LLM_URL, WIKIMEM_LLM_MODEL), so the chat cannot "
                            "be memorized; it can be kept as a transcript instead: a conversation file of the "
                            "character's layer, one item per turn (transcript: true)")
        return out


def preview_chat(owner_id: str, character: Character, chat: Chat, tz: tzinfo, *, model: bool) -> ChatPreview:
    """The cost preview of memorizing ``chat`` as ``character`` for ``owner_id`` (its days read in ``tz``)."""
    from wikimem.llm import CHARACTER_PROMPT, render_character_prompt
    from wikimem.recall import est_tokens

    system = est_tokens(render_character_prompt(CHARACTER_PROMPT, character=character.name,
                                                persona=character.persona or "", person=owner_id))
    words = sum(system + est_tokens(t.text()) for t in chat.turns)
    return ChatPreview(owner_id, character.id, len(chat.turns), len(chat.messages), chat.system, chat.swipes,
                       chat.days(tz), model, len(chat.turns) if model else 0,
                       {"input": round(words * TOKENS_PER_WORD) if model else 0,
                        "output": OUTPUT_TOKENS * len(chat.turns) if model else 0},
                       [t.index for t in chat.turns if t.cut()], list(chat.warnings))


def submit_chat(store: JobStore, owner_id: str, character: str, chat: Chat, *, tz: str | None, run: str,
                context: dict[str, Any], key: str | None = None, tenant: str = "") -> tuple[Job, bool]:
    """The import as a job of one step over every turn; ``(job, created)``. ``context`` is the write context as
    a job keeps it (run, actor, staged…); ``key`` an idempotency key (the same key, the same job)."""
    turns = [[t.when.isoformat(timespec="seconds"), t.text()] for t in chat.turns]
    step = {"owner": owner_id, "character": character, "tz": tz, "turns": turns, **context, "run": run}
    meta = {"owner": owner_id, "character": character, "run": run, "turns": len(turns)}
    scoped = None if key is None else f"{IMPORT_CHAT}\n{owner_id}\n{key}"
    return store.submit(IMPORT_CHAT, [step], params=meta, key=scoped, tenant=tenant,
                        request=[owner_id, character, tz, turns])


def chat_handler(owner: Any, store: Any, retry: MemorizeRetry | None = None):
    """The handler of ``import-chat`` steps: every turn memorized in order (see the module docstring);
    ``owner(id)`` looks an owner up, ``store()`` is the job store (progress reports)."""
    from wikimem.host.gate import job_context
    from wikimem.llm import LLMError

    def run(step: Step) -> dict[str, Any]:
        params = step.params
        person: Owner = owner(params["owner"])
        totals = {"turns": len(params["turns"]), "done": 0, "entries": 0, "facts": 0, "replayed": 0,
                  "run": params["run"], "proposal": False}
        for n, (ts, text) in enumerate(params["turns"]):
            ctx = job_context(params, idempotency_key=f"{step.key}/turn/{n}")
            try:
                done = person.memorize(text, character=params["character"], ctx=ctx, ts=ts, tz=params.get("tz"))
            except StoreBusy as exc:
                raise RetryLater(str(exc), delay=1.0) from None
            except LLMError as exc:
                delay = (retry or MemorizeRetry()).delay(exc, step.attempt)
                if delay is None:
                    raise
                raise RetryLater(f"the model is unavailable at turn {n + 1} of {totals['turns']}: {exc}",
                                 delay=delay) from None
            totals["done"] = n + 1
            totals["entries"] += len(done.entries)
            totals["facts"] += len(done.facts)
            totals["replayed"] += int(done.replayed)
            totals["proposal"] = totals["proposal"] or done.proposal is not None
            if (n + 1) % PROGRESS_EVERY == 0:
                store().progress(step, {**totals, "running": True})
        return totals

    return run


def transcript_items(chat: Chat, tz: tzinfo) -> list[tuple[str, str, str, str]]:
    """``(file, name, content, ts)`` of the conversation file(s) a chat becomes: ``chat-<first day>`` (then
    ``-2``, ``-3``… past a memory file's size), one item per turn named ``turn N (YYYY-MM-DD HH.MM)``, a turn
    longer than an item in parts."""
    out: list[tuple[str, str, str, str]] = []
    first = chat.turns[0].when.astimezone(tz).date().isoformat() if chat.turns else "empty"
    part, size = 1, 0
    for turn in chat.turns:
        local = turn.when.astimezone(tz)
        base = f"turn {turn.index + 1} ({local:%Y-%m-%d %H.%M})"
        text = "\n".join(f"{m.name}: {m.text}" for m in turn.messages)
        pieces = [text[i:i + MAX_CONTENT_CHARS] for i in range(0, len(text), MAX_CONTENT_CHARS)] or [text]
        for i, piece in enumerate(pieces, 1):
            size += len(piece.encode("utf-8")) + len(base) + 120
            if size > MAX_FILE_BYTES * 0.9:
                part, size = part + 1, len(piece.encode("utf-8"))
            name = base if len(pieces) == 1 else f"{base} part {i}"
            file = f"chat-{first}" if part == 1 else f"chat-{first}-{part}"
            out.append((file, name, piece, turn.when.isoformat(timespec="seconds")))
    return out


def keep_transcript(person: Owner, character: str, chat: Chat, tz: tzinfo, ctx: WriteContext) -> dict[str, Any]:
    """The chat kept as it was said, in ``character``'s layer of ``person``: one commit of ``ctx``'s run (an
    item already there with the same text is left alone)."""
    items = transcript_items(chat, tz)
    target, ctx = person.target(ctx.bound("import-transcript", character, items), character)
    written: dict[str, Any] = {"items": 0, "unchanged": 0, "files": sorted({f for f, *_ in items})}

    def write() -> str | None:
        with target.batch(ctx, message=f"import a chat transcript: {len(chat.turns)} turns",
                          kind="import-transcript", action="import") as b:
            if b.replay is not None:
                written.update(b.replay)
                return b.commit
            for file, name, content, ts in items:
                current = target.store.get(file, name)
                if current is not None and current.content == normalize_content(content):
                    written["unchanged"] += 1
                    continue
                target.store.add(file, name, content, owner=person.id, ts=ts)
                written["items"] += 1
            b.result = dict(written)
        return b.commit

    commit = person.write_attempts(write)
    return {**written, "commit": commit, "run": ctx.run, "staged": ctx.staged}


def roll_back(person: Owner, run: str, ctx: WriteContext) -> dict[str, Any]:
    """Undo an import's run on ``person``: its commits on main rolled back (one commit), its proposal to the
    shared layer (the run's staged branch) discarded."""
    discarded = None  # (first, under its own reason: the rollback below then finds nothing left to withdraw)
    if any(s.run == run for s in person.staged_runs()):
        discarded = person.discard_staged(run, ctx=ctx, reason="import rolled back").commit
    commit = None
    if person.history(run=run, limit=1, layers=None).entries and not person.review.run_rolled_back_by(run):
        commit = person.undo("rollback", run, ctx=ctx).commit
    if commit is None and discarded is None:
        raise NotFound(f"run {run!r} wrote nothing on {person.id} (or was undone already)")
    return {"run": run, "commit": commit, "discarded": discarded}

