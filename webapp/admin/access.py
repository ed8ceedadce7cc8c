"""What the views share: the owner an operator may open, and request parameters."""

from __future__ import annotations

from typing import Any, overload

from flask import g, url_for

from webapp.hosting import get_host
from webapp.params import int_in_range
from webapp.session import require_role as _session_require_role
from wikimem.errors import NotFound
from wikimem.host import Act, Ask, Caller
from wikimem.models import WikiLink

from .rendering import WikiText

__all__ = ["load_owner", "wikitext_for", "etags_of", "int_param", "require_role", "act", "PAGE_SIZE"]

PAGE_SIZE = 50


def load_owner(owner_id: str):
    """The owner, if it exists and the operator's prefix covers it.

    An owner outside the prefix is reported as not found, so a limited
    operator cannot probe which owners exist.
    """
    if not g.operator.may_see(owner_id):
        raise NotFound(f"no owner {owner_id!r}")
    return get_host().owner(owner_id)


def wikitext_for(owner, character: str | None = None) -> WikiText:
    """A renderer of this owner's content (of ``character``'s layer: a link resolves there first, then in the
    shared layer, as retrieval resolves it), linking to its item pages."""
    def in_layer(link: WikiLink) -> bool:
        return character is not None and owner.has_item(link.file, link.name, character)

    def href(link: WikiLink) -> str:
        where = character if in_layer(link) else None  # (url_for leaves a None argument out)
        return url_for("admin.item", owner_id=owner.id, file=link.file, name=link.name, character=where)

    return WikiText(lambda link: in_layer(link) or owner.has_item(link.file, link.name), href)


@overload
def int_param(args, name: str, default: int, lo: int, hi: int) -> int: ...
@overload
def int_param(args, name: str, default: None, lo: int, hi: int) -> int | None: ...
def int_param(args, name: str, default: int | None, lo: int, hi: int) -> int | None:
    """An optional integer parameter within ``[lo, hi]``; a clear error otherwise."""
    return int_in_range(args.get(name), name, default, lo, hi)


def etags_of(owner, items) -> dict[str, str]:
    """Each item's etag by name: what an ``If-Match`` write must carry (shown, never computed by a template)."""
    return {item.name: owner.etag(item) for item in items}


def act(owner: Any, action: str, operator: Any, *, if_match: str | None = None, key: str | None = None,
        actor: str | None = None, layer: str | None = None, **target: Any) -> Act:
    """The signed-in operator's change through the host's gate (``with act(...) as a:``): its write context (the
    operator is the actor, unless ``actor`` names another — an import's; ``if_match`` the etag the form was opened
    with; ``key`` a form's request id, so a double submit starts one job; ``layer`` the character's layer it
    writes) and its audit event."""
    caller = Caller.operator(operator.name, operator.owner_prefix)
    ask = Ask(if_match=if_match or None, idempotency_key=key or None, actor=actor, layer=layer)
    return get_host().gate.act(caller, action, owner, ask, **target)


def require_role(role: str):
    """ROLE GATE of the operator pages that change memory: the signed-in operator if their role includes
    ``role`` (``operator``: edit items; ``admin``: delete an owner, bulk rollback), else 403.

    The one call site the item editors, owner deletion and bulk rollback use;
    it asks :func:`webapp.session.require_role` (reviewer < operator < admin).
    """
    return _session_require_role(role)
