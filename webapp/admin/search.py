"""The search pages: plain text search over the wiki and diary of one layer, and real retrieval with its explain
breakdown (optionally as of a past point), as the shared layer alone or recalled as a character (its layer, the
shared layer and its profile: each hit says which)."""

from __future__ import annotations

from dataclasses import dataclass

from flask import render_template, request

from webapp.errors import error_status
from wikimem.errors import WikimemError
from wikimem.host import BadRequest
from wikimem.naming import validate_date

from .access import int_param, load_owner, wikitext_for
from .blueprint import bp
from .layers import layer_switch
from .rendering import Zone, current_zone, in_zone, marked

DIARY_CHOICES = ("", "window", "all")
SEARCH_ARGS = ("q", "limit", "budget", "start", "end", "as_of", "diary", "links", "submitted")  # a switch keeps them


@dataclass(frozen=True)
class SearchForm:
    """The search box as submitted; ``retrieve_kwargs`` is what goes to the library."""

    q: str = ""
    limit: int = 10
    budget: int | None = None
    expand_links: bool = True
    start: str = ""
    end: str = ""
    as_of: str = ""
    diary: str = ""  # "" = the host's default (WIKIMEM_DIARY_RECALL), else window or all

    @property
    def time_range(self) -> tuple[str, str] | None:
        return (self.start, self.end) if self.start else None

    def retrieve_kwargs(self) -> dict:
        return {"limit": self.limit, "budget_tokens": self.budget, "expand_links": self.expand_links,
                "explain": True, "time_range": self.time_range, "as_of": self.as_of or None,
                "diary": self.diary or None}


def typed_search(args) -> dict:
    """The search box as typed, valid or not: what the page shows back (an error never empties the form)."""
    keys = ("q", "limit", "budget", "start", "end", "as_of", "diary")
    typed: dict = {k: (args.get(k) or "") for k in keys}
    typed["limit"] = typed["limit"] or "10"
    typed["links"] = args.get("links") == "on" if "submitted" in args else True
    return typed


def parse_search(args, zone: Zone | None = None) -> SearchForm:
    """Read and check the search parameters; a bad one raises :class:`BadRequest`.

    An ``as_of`` time without an offset is read in ``zone`` (the operator's).
    """
    start, end = (args.get("start") or "").strip(), (args.get("end") or "").strip()
    if bool(start) != bool(end):
        raise BadRequest("a time range needs both a start and an end date")
    if start:
        validate_date(start)
        validate_date(end)
    diary = (args.get("diary") or "").strip()
    if diary not in DIARY_CHOICES:
        raise BadRequest(f"diary must be one of {', '.join(c for c in DIARY_CHOICES if c)}, got {diary[:20]!r}")
    return SearchForm(
        q=args.get("q", ""),
        limit=int_param(args, "limit", 10, 1, 200),
        budget=int_param(args, "budget", None, 1, 1_000_000),
        # A submitted form without the box ticked means "no expansion";
        # a bare link (?q=...) keeps the library's default.
        expand_links=args.get("links") == "on" if "submitted" in args else True,
        start=start, end=end, as_of=in_zone((args.get("as_of") or "").strip(), zone or Zone()) or "", diary=diary,
    )


@bp.get("/owners/<owner_id>/search")
def search(owner_id: str):
    owner = load_owner(owner_id)
    typed = typed_search(request.args)
    layer = layer_switch(owner, request.args, "admin.search", keep=SEARCH_ARGS, registered=True, title="Recall as")
    if "q" not in request.args:
        return render_template("admin/search.html", owner=owner, form=SearchForm(), typed=typed, result=None,
                               error=None, layer=layer)
    try:
        form = parse_search(request.args, current_zone())
        result = owner.retrieve(form.q, character=layer.character, **form.retrieve_kwargs())
    except (WikimemError, ValueError) as exc:  # shown on the page itself, the form as typed, with the app's status
        return render_template("admin/search.html", owner=owner, form=SearchForm(), typed=typed, result=None,
                               error=str(exc), layer=layer), error_status(exc)
    return render_template("admin/search.html", owner=owner, form=form, typed=typed, result=result, error=None,
                           layer=layer, wikitext=wikitext_for(owner, layer.character))


@bp.get("/owners/<owner_id>/find")
def find(owner_id: str):
    owner = load_owner(owner_id)
    q = request.args.get("q", "")
    layer = layer_switch(owner, request.args, "admin.find", keep=("q", "limit"))
    if not q.strip():
        return render_template("admin/find.html", owner=owner, q=q, found=None, error=None, layer=layer)
    try:
        found = owner.review.text_search(q, limit=int_param(request.args, "limit", 50, 1, 500), layer=layer.character)
    except (WikimemError, ValueError) as exc:  # shown on the page itself, with the status the app gives it
        return render_template("admin/find.html", owner=owner, q=q, found=None, error=str(exc),
                               layer=layer), error_status(exc)
    return render_template("admin/find.html", owner=owner, q=q, found=found, error=None, marked=marked, layer=layer)
