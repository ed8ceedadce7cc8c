"""The layer switch of a person's pages (SPEC §11): the shared layer, or one character's (``?character=kai``).

:func:`layer_switch` reads the ``character`` parameter of a Wiki, Diary, Search or History page against the
person's folder: blank is the shared layer (as before layers); a character with a layer in the folder is that
layer (on the recall page, also a registered character not deleted: recall as one without a layer here); ``*`` on
History is every layer; anything else — a malformed id, a character the folder and the registry do not know — is
not found.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from webapp.hosting import get_host
from wikimem.errors import NotFound
from wikimem.naming import is_character_id

__all__ = ["ALL_LAYERS", "LayerChoice", "LayerSwitch", "layer_switch", "character_or_404"]

ALL_LAYERS = "*"  # History only: the commits of every layer


@dataclass(frozen=True)
class LayerChoice:
    """One button of the switch: ``id`` None is the shared layer, :data:`ALL_LAYERS` every layer."""

    id: str | None
    label: str
    deleted: bool = False
    has_layer: bool = True  # False: a registered character with no layer in this folder (recall as it all the same)


@dataclass(frozen=True)
class LayerSwitch:
    """Which layer a page shows (``current``), what it may switch to, and the page's arguments a switch keeps."""

    current: str | None
    choices: list[LayerChoice]
    endpoint: str
    keep: dict[str, str] = field(default_factory=dict)
    title: str = "Layer"

    @property
    def character(self) -> str | None:
        """The character whose layer is shown (None: the shared layer, or every layer)."""
        return None if self.current in (None, ALL_LAYERS) else self.current

    @property
    def layers(self) -> tuple[str | None, ...] | None:
        """What a history read covers (the ``layers`` of :meth:`wikimem.host.Owner.history`)."""
        return None if self.current == ALL_LAYERS else (self.current,)

    @property
    def shown(self) -> bool:
        """Whether there is anything to switch to (a shared-only person shows no switch)."""
        return len(self.choices) > 1

    def args_for(self, choice: str | None) -> dict[str, str]:
        """The query arguments of the same page in another layer."""
        return {**self.keep, **({"character": choice} if choice else {})}

    def label_of(self, layer: str | None) -> str:
        return next((c.label for c in self.choices if c.id == layer), layer or "Shared")

    def carried(self) -> dict[str, str]:
        """What the other tabs of the person carry over: the character whose layer this is (never "every layer",
        History's alone, nor a character recalled as that has no layer here)."""
        chosen = next((c for c in self.choices if c.id == self.character), None)
        return {"character": chosen.id} if chosen is not None and chosen.id and chosen.has_layer else {}


def character_or_404(raw: str | None, known: Iterable[str], where: str) -> str | None:
    """``raw`` as a character id known here (None when blank); malformed or unknown is :class:`NotFound` (a
    page of no such layer, as an owner outside the operator's prefix is)."""
    text = (raw or "").strip()
    if not text:
        return None
    if not is_character_id(text) or text not in set(known):
        raise NotFound(f"no character layer {text[:80]!r} in {where}: pick one of the layer switch")
    return text


def _definition(character: str):
    """The registered character (deleted ones too), or None."""
    try:
        return get_host().characters.get(character)
    except NotFound:
        return None


def _choice(character: str, layers: list[str]) -> LayerChoice:
    found = _definition(character)
    return LayerChoice(character, found.name if found is not None else character,
                       bool(found is not None and found.deleted), character in layers)


def layer_switch(owner, args, endpoint: str, *, keep: Iterable[str] = (), every: bool = False,
                 registered: bool = False, title: str = "Layer") -> LayerSwitch:
    """The switch of ``endpoint`` for ``owner`` as ``args`` ask (see the module's docstring); ``keep``: the
    arguments a switch carries to the other layer's page; ``every``: offer every layer at once (History).

    The choices are the folder's layers (one registry lookup each, never the whole registry: a host may hold a
    thousand characters); with ``registered``, a registered character the request names is one too."""
    layers = owner.layers()
    raw = (args.get("character") or "").strip()
    extra = raw if registered and is_character_id(raw) and raw not in layers else None
    if extra is not None and ((found := _definition(extra)) is None or found.deleted):
        extra = None
    choices = [LayerChoice(None, "Shared only" if registered else "Shared"),
               *(_choice(c, layers) for c in sorted({*layers, *([extra] if extra else [])}))]
    current = ALL_LAYERS if every and raw == ALL_LAYERS else \
        character_or_404(raw, [c.id for c in choices if c.id], f"the folder of {owner.id!r}")
    if every and len(choices) > 1:
        choices.append(LayerChoice(ALL_LAYERS, "All layers"))
    kept = {k: args[k].strip() for k in keep if (args.get(k) or "").strip()}
    return LayerSwitch(current, choices, endpoint, kept, title)
