"""Wiki-links: ``[[file:name]]`` inside item content."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["parse_wiki_links", "LINK_RE", "WikiLink"]

# The file part runs up to the first colon; neither side may hold '[', ']',
# ':' or a newline, so "[[a:b:c]]" or "[[a\n:b]]" are simply not links.
LINK_RE = re.compile(r"\[\[([^\[\]:\n]*):([^\[\]:\n]*)\]\]")


@dataclass(frozen=True)
class WikiLink:
    """A ``[[file:name]]`` reference from one memory to a wiki item."""

    file: str
    name: str

    def render(self) -> str:
        return f"[[{self.file}:{self.name}]]"


def parse_wiki_links(text: str) -> list[WikiLink]:
    """Extract links in order of appearance; malformed links are ignored."""
    if not isinstance(text, str) or "[[" not in text:
        return []
    links = []
    for match in LINK_RE.finditer(text):
        file, name = match.group(1).strip(), match.group(2).strip()
        if file and name:
            links.append(WikiLink(file, name))
    return links
