"""The character registry (SPEC §11): the bot's characters, each defined in its own owner ``char:<id>``.

- :class:`Character`: one definition (name, persona, ``shared_writes``, deleted or not, when it changed);
- :class:`Characters` (held as ``host.characters``): ``get``, ``list``, ``put``, ``delete``, ``resolve`` (the
  ``character`` a memorize names) and ``migrate`` (owners whose ``character`` setting is a free-text name);
- :func:`slug_of`: the id a free-text name becomes.

The definition lives in ``char:<id>``'s ``settings.json`` (field ``definition``), so every change is a commit
there. Deleting marks it deleted (a commit): the character can no longer be named by memorize or a write,
its layers in persons' folders stay as they are, readable to operators until erased or forgotten, and
``PUT`` registers it again. Essay: docs/guides/characters-registry.md.
"""

from __future__ import annotations

import builtins
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from wikimem.errors import InvalidName, InvalidValue, NotFound, NotPermitted
from wikimem.format import utc_now
from wikimem.limits import MAX_CHARACTERS
from wikimem.naming import MAX_CHARACTER_ID_LEN, validate_character_id

from .settings import CHARACTER_PREFIX, DEFINITION, MAX_CHARACTER, check_definition

if TYPE_CHECKING:
    from .gate import Caller, Gate
    from .owner import Owner

__all__ = ["Character", "Characters", "Migration", "slug_of", "character_owner"]


def character_owner(character: str) -> str:
    """The owner id of a character's own profile and definition: ``char:<id>`` (InvalidName for a bad id)."""
    return CHARACTER_PREFIX + validate_character_id(character)


def _how_to_register(character: str, name: str | None = None) -> str:
    shown = name or character.capitalize()
    return (f"register it: PUT /api/v1/characters/{character} {{\"name\": \"{shown}\"}} "
            f"(or: wikimem character put {character} --name '{shown}')")


@dataclass(frozen=True)
class Character:
    """One registered character, as its definition reads at ``head`` (the newest commit of ``char:<id>``)."""

    id: str
    name: str
    persona: str | None = None
    shared_writes: str = "staged"
    deleted: bool = False
    updated: str | None = None  # when the definition last changed (UTC)
    head: str | None = None

    @property
    def owner_id(self) -> str:
        return CHARACTER_PREFIX + self.id

    @classmethod
    def of(cls, character: str, definition: dict[str, Any], head: str | None = None) -> Character:
        return cls(character, definition["name"], definition.get("persona"), definition.get("shared_writes", "staged"),
                   bool(definition.get("deleted")), definition.get("updated"), head)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "owner": self.owner_id, "name": self.name, "persona": self.persona,
                "shared_writes": self.shared_writes, "deleted": self.deleted, "updated": self.updated,
                "head": self.head}


@dataclass
class Migration:
    """What ``migrate`` does for one free-text ``character`` setting: the character it names (``registered``:
    made now; else found by its name) and the owners whose setting becomes the id."""

    name: str
    character: str
    registered: bool
    owners: list[str] = field(default_factory=list)
    commits: dict[str, str | None] = field(default_factory=dict)  # owner id (char: one included) -> commit

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "character": self.character, "registered": self.registered,
                "owners": list(self.owners), "commits": dict(self.commits)}


def slug_of(name: str) -> str:
    """A character id for a free-text name: ASCII lowercase, other runs as ``-``, room left for a ``-N``
    suffix; ``character`` when nothing is left (``小艾``)."""
    text = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii").lower()
    text = re.sub(r"[^a-z0-9_]+", "-", text).strip("-")
    return text[:MAX_CHARACTER_ID_LEN - 4].rstrip("-") or "character"


class Characters:
    """The registry of a host (see the module's docstring); built with the host's lookups and its gate."""

    def __init__(self, *, owner: Callable[[str], Owner], ensure: Callable[[str], tuple[Owner, bool]],
                 ids: Callable[[str], list[str]], gate: Gate):
        self._owner = owner
        self._ensure = ensure
        self._ids = ids
        self._gate = gate

    # -- reading -----------------------------------------------------------------------------

    def get(self, character: str) -> Character:
        """The character (deleted ones too: ``deleted`` says so); InvalidName for a malformed id, NotFound with
        how to register it for an unknown one."""
        found = self._find(character_owner(character))
        if found is None:
            raise NotFound(f"no character {character!r}; {_how_to_register(character)}")
        return found

    def writable(self, character: str) -> Character:
        """The character a write into its layer names: registered (else NotFound saying how to register it) and not
        deleted (else :class:`~wikimem.errors.NotPermitted`: its layers stay readable, it writes no more)."""
        found = self.get(character)
        if found.deleted:
            raise NotPermitted(f"the character {character!r} was deleted: its layers stay readable to operators "
                               f"until erased, and nothing is written into them any more (register it again: "
                               f"PUT /api/v1/characters/{character})")
        return found

    def shared_writes(self, character: str) -> str:
        """How the character's writes reach the shared layer (``staged``, ``direct``, ``none``): ``none`` for a
        deleted or unknown one (a token bound to it may still read, never change what every character shares)."""
        try:
            found = self.get(character)
        except NotFound:
            return "none"
        return "none" if found.deleted else found.shared_writes

    def exists(self, character: str) -> bool:
        """Whether the character is registered and not deleted."""
        found = self._find(character_owner(character))
        return found is not None and not found.deleted

    def list(self, *, deleted: bool = False) -> list[Character]:
        """Every registered character by id (``deleted``: the deleted ones too)."""
        found = (self._find(owner_id) for owner_id in self._ids(CHARACTER_PREFIX))
        return [c for c in found if c is not None and (deleted or not c.deleted)]

    def resolve(self, value: object) -> Character:
        """The character a request names (memorize's ``character``): a registered, not deleted id.

        A free-text name (what ``character`` was before the registry) is
        NotFound with how to register it and how ``wikimem character migrate``
        converts the settings that hold one; a value that is no name at all is InvalidName.
        """
        if not isinstance(value, str):
            raise InvalidName(f"character must be a character id, got {type(value).__name__}")
        try:
            character = validate_character_id(value)
        except InvalidName:
            if not value.strip() or len(value) > MAX_CHARACTER or "\n" in value:
                raise
            raise NotFound(f"{value!r} is not a registered character id (characters are registered now); "
                           f"{_how_to_register(slug_of(value), value)}; owners whose settings name a character "
                           "by its name are converted by: wikimem character migrate") from None
        found = self.get(character)
        if found.deleted:
            raise NotFound(f"character {character!r} was deleted ({found.updated}) and can no longer write; "
                           f"{_how_to_register(character, found.name)} to bring it back")
        return found

    def _find(self, owner_id: str) -> Character | None:
        try:
            owner = self._owner(owner_id)
        except NotFound:
            return None
        definition = owner.settings().definition
        if definition is None:  # a char: owner made by hand, never registered
            return None
        return Character.of(owner_id[len(CHARACTER_PREFIX):], definition, owner.head())

    # -- writing ------------------------------------------------------------------------------

    def put(self, character: str, *, name: str, persona: str | None = None, shared_writes: str = "staged",
            ctx: Any = None) -> tuple[Character, str | None]:
        """Register or change a character as one commit in ``char:<id>`` (made when missing); ``(character,
        commit)``, the commit None when nothing changed. Past :data:`~wikimem.limits.MAX_CHARACTERS` profiles
        a new one is refused (InvalidValue)."""
        owner_id = character_owner(character)
        definition = check_definition({"name": name, "persona": persona, "shared_writes": shared_writes})
        existing = self._find(owner_id)
        if existing is not None and not existing.deleted and (existing.name, existing.persona, existing.shared_writes) \
                == (definition["name"], definition["persona"], definition["shared_writes"]):
            return existing, None
        new = existing is None and owner_id not in self._ids(owner_id)
        if new and len(self._ids(CHARACTER_PREFIX)) >= MAX_CHARACTERS:
            raise InvalidValue(f"this host holds {MAX_CHARACTERS:,} character profiles, the most it keeps: erase a "
                               "deleted character's profile (POST /api/v1/owners/char:<id>/erase) to make room")
        return self._write(character, {**definition, "updated": utc_now()}, ctx)

    def delete(self, character: str, *, ctx: Any = None) -> tuple[Character, str | None]:
        """Mark the character deleted (one commit in ``char:<id>``; None when it was already): it can no longer
        write; its layers stay until erased or forgotten. NotFound when it was never registered."""
        found = self.get(character)
        if found.deleted:
            return found, None
        definition = {"name": found.name, "persona": found.persona, "shared_writes": found.shared_writes,
                      "deleted": True, "updated": utc_now()}
        return self._write(character, definition, ctx)

    def _write(self, character: str, definition: dict[str, Any], ctx: Any) -> tuple[Character, str | None]:
        owner, _ = self._ensure(character_owner(character))
        done = owner.put_settings({DEFINITION: definition}, ctx=ctx)
        return Character.of(character, done.value.definition or definition, done.commit), done.commit

    # -- migration ------------------------------------------------------------------------------

    def migrate(self, caller: Caller, *, dry_run: bool = False) -> builtins.list[Migration]:
        """Register one character per distinct free-text ``character`` setting and rewrite each owner's setting
        to its id, each a commit through the gate as ``caller`` (``dry_run``: the plan only). Idempotent: a
        setting that names a registered character is left alone, a name registered before is reused."""
        plan = self._plan()
        if not dry_run:
            for step in plan:
                self._apply(caller, step)
        return plan

    def _plan(self) -> builtins.list[Migration]:
        named: dict[str, builtins.list[str]] = {}
        for owner_id in self._ids(""):
            if owner_id.startswith(CHARACTER_PREFIX):
                continue
            value = self._owner(owner_id).settings().character
            if value is not None and not self._names_a_character(value):
                named.setdefault(value, []).append(owner_id)
        known = {c.id: c for c in self.list(deleted=True)}
        by_name = {c.name: c.id for c in known.values() if not c.deleted}
        plan = []
        for value in sorted(named):
            if value in by_name:
                plan.append(Migration(value, by_name[value], False, named[value]))
                continue
            character = self._free_id(slug_of(value), known)
            known[character] = Character(character, value)
            by_name[value] = character
            # A setting that is a free id already ("kai") stays as it is: only the character is registered.
            plan.append(Migration(value, character, True, [o for o in named[value] if value != character]))
        return plan

    def _names_a_character(self, value: str) -> bool:
        """Whether a setting already holds a registered character's id (deleted ones included: not free text)."""
        try:
            return self._find(character_owner(value)) is not None
        except InvalidName:
            return False

    def _free_id(self, base: str, known: dict[str, Character]) -> str:
        """``base``, or ``base-2``, ``base-3``… : the first id no character (and no stray char: owner) holds."""
        taken = set(known) | {i[len(CHARACTER_PREFIX):] for i in self._ids(CHARACTER_PREFIX)}
        n, candidate = 1, base
        while candidate in taken:
            n += 1
            candidate = f"{base}-{n}"
        return candidate

    def _apply(self, caller: Caller, step: Migration) -> None:
        if step.registered:
            with self._gate.act(caller, "character-put", character_owner(step.character),
                                character=step.character, migrated=True) as act:
                _, commit = self.put(step.character, name=step.name, ctx=act.ctx)
                act.done(commit)
                step.commits[character_owner(step.character)] = commit
        for owner_id in step.owners:
            with self._gate.act(caller, "settings", owner_id, character=step.character, migrated=True) as act:
                done = self._owner(owner_id).put_settings({"character": step.character}, ctx=act.ctx)
                act.done(done.commit)
                step.commits[owner_id] = done.commit
