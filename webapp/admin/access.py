"""What the views share: the owner an operator may open, and request parameters."""

from __future__ import annotations

from flask import g, url_for

from wikimem.errors import InvalidName, NotFound
from wikimem.models import WikiLink

from .wikitext import WikiText

__all__ = ["load_owner", "scoped_prefix", "wikitext_for", "etags_of", "BadParam", "int_param", "PAGE_SIZE"]

PAGE_SIZE = 50


class BadParam(InvalidName):
    """A query or form parameter that cannot be used (shown to the operator, 400)."""

    code = "bad_request"


def _host():
    from .. import get_host

    return get_host()


def load_owner(owner_id: str):
    """The owner, if it exists and the operator's prefix covers it.

    An owner outside the prefix is reported as not found, so a limited
    operator cannot probe which owners exist.
    """
    if not g.operator.may_see(owner_id):
        raise NotFound(f"no owner {owner_id!r}")
    return _host().owner(owner_id)


def scoped_prefix(operator_prefix: str, wanted: str) -> str | None:
    """The owner-id prefix to list: the operator's scope narrowed by the search.

    None when the search lies outside the scope (nothing may be listed).
    """
    if wanted.startswith(operator_prefix):
        return wanted
    if operator_prefix.startswith(wanted):
        return operator_prefix
    return None


def wikitext_for(owner) -> WikiText:
    """A renderer of this owner's content, linking to its item pages."""
    def href(link: WikiLink) -> str:
        return url_for("admin.item", owner_id=owner.id, file=link.file, name=link.name)

    return WikiText(lambda link: owner.store.get(link.file, link.name) is not None, href)


def int_param(args, name: str, default: int | None, lo: int, hi: int) -> int | None:
    """An optional integer parameter within ``[lo, hi]``; a clear error otherwise."""
    raw = (args.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadParam(f"{name} must be a whole number, got {raw!r}") from None
    if not lo <= value <= hi:
        raise BadParam(f"{name} must be between {lo} and {hi}, got {value}")
    return value


def etags_of(items) -> dict[str, str]:
    """Each item's etag by name: what an ``If-Match`` write must carry (shown, never computed by a template)."""
    from wikimem.versioned import item_etag

    return {item.name: item_etag(item) for item in items}
