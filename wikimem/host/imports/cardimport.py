"""A card becomes a character: :func:`plan_card` (which id, what changes: the preview) and :func:`apply_card`
(one commit in the character's profile ``char:<id>``: its definition, its lorebook and card items; the card's
other fields in the profile's ``card`` layer, see :mod:`.lorebook`).

The id comes from the card's name through the id rules (:func:`~wikimem.host.characters.slug_of`); when a
character of another name holds it, ``-2``, ``-3``… are tried; a character of the same name is the same one,
and importing its card again updates it. The definition is the card's name and a persona made of its
description and personality (cut to :data:`~wikimem.limits.MAX_PERSONA_CHARS`, said in the warnings: the whole
text stays in the ``card`` file); ``shared_writes`` stays what it was (``staged`` for a new character).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from wikimem.context import WriteContext
from wikimem.errors import InvalidValue, NotFound
from wikimem.format import SETTINGS_PATH, parse_settings, render_settings, utc_now
from wikimem.limits import MAX_CHARACTERS, MAX_PERSONA_CHARS
from wikimem.naming import validate_character_id

from ..characters import Character, character_owner, slug_of
from ..settings import CHARACTER_PREFIX, DEFINITION, check_definition, settings_record
from .cards import Card
from .lorebook import CARD_FILE, CARD_LAYER, LOREBOOK_FILE, Planned, entry_items, field_items

if TYPE_CHECKING:
    from ..owner import Owner

__all__ = ["CardPlan", "plan_card", "apply_card", "IMPORT_ACTOR"]

IMPORT_ACTOR = "import"  # the actor of every import's commits (who asked is in the audit event)
_FILES = ((None, LOREBOOK_FILE), (CARD_LAYER, CARD_FILE))  # (layer, file) of what an import writes


@dataclass
class CardPlan:
    """What importing a card does to its character: the preview, and what :func:`apply_card` writes."""

    character: str
    card: Card
    created: bool  # a character not registered yet (or deleted: registered again)
    before: dict[str, Any] | None
    definition: dict[str, Any]
    puts: list[Planned] = field(default_factory=list)
    removes: list[tuple[str | None, str, str]] = field(default_factory=list)  # (layer, file, name)
    unchanged: int = 0
    known: set[tuple[str | None, str, str]] = field(default_factory=set)  # the items the profile holds now
    warnings: list[str] = field(default_factory=list)

    @property
    def changes(self) -> bool:
        return bool(self.puts or self.removes) or self.before != self.definition

    def to_dict(self) -> dict[str, Any]:
        added = [p for p in self.puts if p.key not in self.known]
        changed = [p for p in self.puts if p.key in self.known]
        return {"character": self.character, "owner": character_owner(self.character), "created": self.created,
                "changes": self.changes, "definition": {"before": self.before, "after": self.definition},
                "items": {"added": [_shown(*p.key) for p in added], "changed": [_shown(*p.key) for p in changed],
                          "removed": [_shown(*k) for k in self.removes], "unchanged": self.unchanged},
                "card": self.card.summary(), "warnings": [*self.card.warnings, *self.warnings]}


def _shown(layer: str | None, file: str, name: str) -> dict[str, str]:
    return {"file": file, "name": name, **({"layer": layer} if layer else {})}


def plan_card(card: Card, characters: Any, owner_of: Any, ids: list[str], *, character: str | None = None,
              shared_writes: str | None = None) -> CardPlan:
    """The preview of importing ``card``: as ``character`` (an id to write, whatever it holds), else the id its
    name gives (see the module docstring). ``owner_of(owner_id)`` opens a profile (NotFound when missing),
    ``ids`` the owner ids of every profile (``char:…``)."""
    found: Character | None
    if character is not None:
        validate_character_id(character)
        found = _registered(characters, character)
    else:
        character, found = _free_id(card.name, characters, {i[len(CHARACTER_PREFIX):] for i in ids})
    before = {"name": found.name, "persona": found.persona, "shared_writes": found.shared_writes} \
        if found is not None and not found.deleted else None
    persona, warnings = card.persona(), []
    if len(persona) > MAX_PERSONA_CHARS:
        warnings.append(f"the persona (description and personality) is {len(persona):,} characters: its first "
                        f"{MAX_PERSONA_CHARS:,} are the character's persona, the whole text stays in the card file")
        persona = persona[:MAX_PERSONA_CHARS]
    policy = shared_writes or (found.shared_writes if found is not None else "staged")
    definition = check_definition({"name": card.name, "persona": persona or None, "shared_writes": policy})
    definition = {k: definition[k] for k in ("name", "persona", "shared_writes")}
    plan = CardPlan(character, card, found is None or found.deleted, before, definition, warnings=warnings)
    if plan.created and found is None and character_owner(character) not in ids and len(ids) >= MAX_CHARACTERS:
        raise InvalidValue(f"this host holds {MAX_CHARACTERS:,} character profiles, the most it keeps")
    _plan_items(plan, owner_of)
    return plan


def _registered(characters: Any, character: str) -> Character | None:
    try:
        return characters.get(character)
    except NotFound:
        return None


def _free_id(name: str, characters: Any, taken: set[str]) -> tuple[str, Character | None]:
    """The id for a card named ``name``: its slug, else the slug with the first free ``-N``; a character of the
    same name holding one of them is the one (its card imported again)."""
    base = slug_of(name)
    n, candidate = 1, base
    while True:
        found = _registered(characters, candidate)
        if found is not None and found.name == name:
            return candidate, found
        if found is None and candidate not in taken:
            return candidate, None
        n += 1
        candidate = f"{base}-{n}"


def _plan_items(plan: CardPlan, owner_of: Any) -> None:
    wanted = entry_items(plan.card.entries) + field_items(plan.card)
    try:
        profile = owner_of(character_owner(plan.character))
        current = {(layer, i.file, i.name): i.content for layer, file in _FILES
                   for i in profile.store.layer(layer).items(file)}
    except NotFound:
        current = {}
    plan.known = set(current)
    keys = {p.key for p in wanted}
    for item in wanted:
        if current.get(item.key) == item.content:
            plan.unchanged += 1
        else:
            plan.puts.append(item)
    plan.removes = sorted((k for k in current if k not in keys), key=lambda k: (k[0] or "", k[1], k[2]))


def apply_card(profile: Owner, plan: CardPlan, ctx: WriteContext) -> str | None:
    """Write ``plan`` into ``profile`` (the character's ``char:<id>``) as one commit of ``ctx``'s run: the
    definition in its settings, the items; the commit (None when nothing changed). A retry with the same
    idempotency key replays the first write."""
    main = profile.vstore.main
    ctx = ctx.bound("import-card", plan.character, plan.definition, [asdict(p) for p in plan.puts], plan.removes)
    entries = len(plan.card.entries)
    message = f"import card {plan.card.name[:60]}: {entries} lorebook entr{'y' if entries == 1 else 'ies'}"

    def write() -> str | None:
        with main.batch(ctx, message=message, kind="import-card", action="import") as b:
            if b.replay is not None:
                return b.commit
            if plan.created or plan.before != plan.definition:
                _put_definition(profile, {**plan.definition, "deleted": False, "updated": utc_now()})
            for layer, file, name in plan.removes:
                main.store.layer(layer).remove(file, name, owner=profile.id)
            for item in plan.puts:
                main.store.layer(item.layer).add(item.file, item.name, item.content, owner=profile.id)
            b.result = {"character": plan.character}
        return b.commit

    if not plan.changes and not plan.created:
        return None
    return profile.write_attempts(write)


def _put_definition(profile: Owner, definition: dict[str, Any]) -> None:
    """The definition written into ``settings.json`` inside the open unit (what ``Owner.put_settings`` does in a
    unit of its own: the other settings as the branch holds them, the record in the journal)."""
    vstore = profile.vstore
    base = vstore.head_file(SETTINGS_PATH)
    merged = {**parse_settings(base), DEFINITION: definition}
    new = render_settings(merged)
    if new != base:
        vstore.writer.apply({SETTINGS_PATH: (vstore.writer.read(SETTINGS_PATH), new)},
                            settings_record({DEFINITION: definition}))
