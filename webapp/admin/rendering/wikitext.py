"""Memory content as HTML: escaped text with navigable wiki-links.

Memory content is untrusted. Nothing of it is ever passed through as markup:
the content is split into plain-text and ``[[file:name]]`` segments, every
segment is escaped, and only the anchors around links are built here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from markupsafe import Markup, escape

from wikimem.links import LINK_RE
from wikimem.models import WikiLink

__all__ = ["Segment", "split_links", "WikiText"]


@dataclass(frozen=True)
class Segment:
    """A run of content: plain text, or the raw text of one wiki-link."""

    text: str
    link: WikiLink | None = None


def split_links(text: str) -> list[Segment]:
    """Split ``text`` into text and link segments, in order, losing nothing.

    Uses the library's own link pattern so that what is rendered as a link
    is exactly what retrieval expands; malformed links stay plain text.
    """
    out: list[Segment] = []
    pos = 0
    for match in LINK_RE.finditer(text or ""):
        file, name = match.group(1).strip(), match.group(2).strip()
        if not (file and name):
            continue
        if match.start() > pos:
            out.append(Segment(text[pos:match.start()]))
        out.append(Segment(match.group(0), WikiLink(file, name)))
        pos = match.end()
    if pos < len(text or ""):
        out.append(Segment(text[pos:]))
    return out


class WikiText:
    """Render content of one owner's memory, resolving links against its store.

    ``exists(link)`` says whether the target item is there; ``href(link)``
    gives the URL of its page. Both are supplied by the view, so this module
    knows nothing of Flask routing or of stores.
    """

    def __init__(self, exists: Callable[[WikiLink], bool], href: Callable[[WikiLink], str]):
        self._exists = exists
        self._href = href
        self._known: dict[WikiLink, bool] = {}

    def resolves(self, link: WikiLink) -> bool:
        """Whether ``link`` points at an item (cached per page render)."""
        if link not in self._known:
            try:
                self._known[link] = bool(self._exists(link))
            except ValueError:  # a target name that can never exist on disk
                self._known[link] = False
        return self._known[link]

    def __call__(self, text: str | None) -> Markup:
        parts = []
        for seg in split_links(text or ""):
            if seg.link is None:
                parts.append(escape(seg.text))
            elif self.resolves(seg.link):
                parts.append(Markup('<a class="wikilink" href="{}">{}</a>').format(self._href(seg.link), seg.text))
            else:
                title = f"dangling link: no item {seg.link.name!r} in {seg.link.file!r}"
                parts.append(Markup('<span class="wikilink dangling" title="{}">{}</span>').format(title, seg.text))
        return Markup("").join(parts)
