"""The imports of a host, held as ``host.imports``: :class:`Imports`, the one service every edge (API, admin, CLI)
calls for cards, chats, portable persons and the memories handed back to SillyTavern."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from wikimem.context import WriteContext, digest, new_run_id
from wikimem.errors import LLMNotConfigured, NotFound
from wikimem.timeparse import resolve_tz

from ..characters import character_owner
from ..fleet import IMPORT_CHAT
from .cardimport import IMPORT_ACTOR, CardPlan, apply_card, plan_card
from .cards import read_card
from .chatimport import ChatPreview, keep_transcript, preview_chat, roll_back, submit_chat
from .chats import Chat, read_chat
from .lorebook import CARD_FILE, CARD_LAYER, LOREBOOK_FILE, rebuild_card
from .portable import PersonImported, import_person, received
from .worldinfo import data_bank, world_info

if TYPE_CHECKING:
    from ..characters import Characters
    from ..fleet import HostJobs, Job
    from ..owner import Owner
    from ..owners import Owners

__all__ = ["Imports", "CardImported"]


@dataclass
class CardImported:
    """A card imported: its plan (what changed) and the commit in ``char:<id>`` (None: nothing changed)."""

    plan: CardPlan
    commit: str | None
    run: str

    def to_dict(self) -> dict[str, Any]:
        return {**self.plan.to_dict(), "commit": self.commit, "run": self.run}


class Imports:
    """Cards → characters, chats → a person's memory, persons in and out, memories back as a lorebook."""

    def __init__(self, *, owners: Owners, characters: Characters, jobs: HostJobs, llm: Any = None,
                 export: Callable[[str, str, str | None], bytes] | None = None):
        self.owners = owners
        self.characters = characters
        self.jobs = jobs
        self.llm = llm
        self._export = export

    # -- cards ---------------------------------------------------------------------------------------

    def preview_card(self, raw: bytes, *, character: str | None = None,
                     shared_writes: str | None = None) -> CardPlan:
        """What importing the card in ``raw`` (JSON or PNG bytes) would do (see :func:`plan_card`)."""
        return plan_card(read_card(raw), self.characters, self.owners.owner, self.owners.owner_ids("char:"),
                         character=character, shared_writes=shared_writes)

    def import_card(self, raw: bytes, *, ctx: WriteContext | None = None, character: str | None = None,
                    shared_writes: str | None = None) -> CardImported:
        """Import the card as its character: one commit in ``char:<id>`` (made when missing), the run of ``ctx``
        (else a new one), actor ``import``."""
        plan = self.preview_card(raw, character=character, shared_writes=shared_writes)
        ctx = _import_ctx(ctx)
        profile, _ = self.owners.ensure(character_owner(plan.character))
        return CardImported(plan, apply_card(profile, plan, ctx), ctx.run or "")

    def card_of(self, character: str) -> dict[str, Any]:
        """The card a character's profile holds (its card and lorebook files), as the card was imported."""
        profile = self.owners.owner(character_owner(character))
        fields = profile.store.layer(CARD_LAYER).items(CARD_FILE)
        if not fields:
            raise NotFound(f"character {character!r} was not imported from a card")
        return rebuild_card([(i.name, i.content) for i in fields],
                            [(i.name, i.content) for i in profile.store.items(LOREBOOK_FILE)])

    # -- chats ---------------------------------------------------------------------------------------

    def read_chat(self, person: Owner, raw: bytes, tz: str | None = None) -> tuple[Chat, str | None, tzinfo]:
        """The chat in ``raw``, its local times read in ``tz`` (else the person's zone, else the host's)."""
        name = tz or person.settings().tz or person.default_tz
        zone = resolve_tz(name) or datetime.now().astimezone().tzinfo
        assert zone is not None
        return read_chat(raw, zone), name, zone

    def preview_chat(self, person: Owner, character: str, raw: bytes, *, tz: str | None = None) -> ChatPreview:
        """The cost preview of importing a chat into ``character``'s layer of ``person``."""
        who = self.characters.resolve(character)
        chat, _, zone = self.read_chat(person, raw, tz)
        return preview_chat(person.id, who, chat, zone, model=self.llm is not None)

    def import_chat(self, person: Owner, character: str, raw: bytes, *, ctx: WriteContext | None = None,
                    tz: str | None = None, tenant: str = "") -> tuple[Job, bool, ChatPreview]:
        """Memorize the chat turn by turn as one job and one run (``ctx``'s, else a new one); ``(job, created,
        preview)``. Without a chat model: LLMNotConfigured, saying the transcript can be kept instead."""
        who = self.characters.resolve(character)
        chat, name, zone = self.read_chat(person, raw, tz)
        preview = preview_chat(person.id, who, chat, zone, model=self.llm is not None)
        if self.llm is None:
            raise LLMNotConfigured(preview.to_dict()["offer"])
        ctx = _import_ctx(ctx)
        context = {k: v for k, v in (("actor", ctx.actor), ("source_conv", ctx.source_conv),
                                     ("staged", ctx.staged or None)) if v is not None}
        job, created = submit_chat(self.jobs.store, person.id, who.id, chat, tz=name, run=ctx.run or "",
                                   context=context, key=ctx.idempotency_key, tenant=tenant)
        self.jobs.wake()
        return job, created, preview

    def keep_transcript(self, person: Owner, character: str, raw: bytes, *, ctx: WriteContext | None = None,
                        tz: str | None = None) -> dict[str, Any]:
        """Keep the chat as a conversation file of ``character``'s layer (one commit, one run; no model)."""
        who = self.characters.resolve(character)
        chat, _, zone = self.read_chat(person, raw, tz)
        return keep_transcript(person, who.id, chat, zone, _import_ctx(ctx))

    def roll_back(self, person: Owner, run: str, *, ctx: WriteContext | None = None) -> dict[str, Any]:
        """Undo an import's run on ``person`` (its commits, and its proposal to the shared layer)."""
        return roll_back(person, run, WriteContext.of(ctx))

    def chat_job(self, job_id: str) -> Job:
        """A chat import job (NotFound for another kind); while it is unfinished, this process helps run it."""
        found = self.jobs.store.get(job_id)
        if found.kind != IMPORT_CHAT:
            raise NotFound(f"no chat import job {job_id!r}")
        if found.state in ("queued", "running"):
            self.jobs.start()
        return found

    # -- persons -------------------------------------------------------------------------------------

    def export_person(self, owner_id: str, *, by: str | None = None) -> bytes:
        """The person's portable file (every layer, the whole history, settings, staged runs): a git bundle."""
        assert self._export is not None, "Imports built without the host's export"
        return self._export(owner_id, "bundle", by)

    def import_person(self, owner_id: str, source: Path | BinaryIO, *, replace: bool = False) -> PersonImported:
        """Make ``owner_id`` from a portable file, a path or a stream (copied to the staging folder first, at most
        :data:`~wikimem.limits.MAX_PERSON_BYTES`); see :mod:`.portable`."""
        if isinstance(source, Path):
            return import_person(self.owners, owner_id, source, replace=replace, registered=self.characters.exists)
        with received(source, self.owners.staging_dir) as path:
            return import_person(self.owners, owner_id, path, replace=replace, registered=self.characters.exists)

    # -- memories back to the companion world ------------------------------------------------------

    def _layers(self, person: Owner, character: str | None, shared: bool) -> list[tuple[str | None, list]]:
        """``(layer, items)`` of what is exported: the character's layer, and the shared one when asked for (or
        when no character is named: a profile's own lorebook, a person's shared memory)."""
        out: list[tuple[str | None, list]] = []
        if character is not None:
            self.characters.get(character)  # (NotFound, with how to register it, for an unknown one)
            out.append((character, person.items(character=character)))
        if shared or character is None:
            out.append((None, person.items()))
        return out

    def world_info(self, person: Owner, character: str | None = None, *, shared: bool = False) -> dict[str, Any]:
        """What ``character`` knows of ``person`` (its layer; with ``shared``, the shared layer too) as a
        SillyTavern World Info book; for a character's own profile (``char:<id>``, no character), its lorebook."""
        layers = self._layers(person, character, shared)
        sources = [("shared · " if layer is None and character is not None else "", items) for layer, items in layers]
        return world_info(sources, name=person.id + (f" · {character}" if character else ""))

    def data_bank(self, person: Owner, character: str | None = None, *, shared: bool = False) -> str:
        """The same as one markdown file for SillyTavern's Data Bank, with the diary of the layer."""
        who = self.characters.get(character).name if character else "the assistant"
        sources = [(f"What {who} learned" if layer is not None else "Shared memory", items)
                   for layer, items in self._layers(person, character, shared)]
        diary = person.layer(character).diary
        entries = [e for day in diary.dates() for e in diary.day(day)]
        return data_bank(f"What {who} knows of {person.id}", sources, entries,
                         intro=f"Exported from wikimem: {who}'s memory of {person.id}"
                               + (", with the shared layer." if shared else "."))


def _import_ctx(ctx: WriteContext | None) -> WriteContext:
    """An import's context: actor ``import`` (who asked is in the audit event), its run: the one given, else one
    made from its idempotency key (a retry is the same run), else a new one."""
    ctx = WriteContext.of(ctx)
    key = ctx.idempotency_key
    run = ctx.run or (f"run_{digest('import', key)[:20]}" if key else new_run_id())
    return WriteContext.of(ctx, actor=IMPORT_ACTOR, run=run)
