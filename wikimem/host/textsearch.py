"""Plain text search over an owner's wiki and diary: every word of the query, anywhere, any case.

What an operator coming from a memory dashboard expects of a search box
(find the memories that say "oolong"), next to the retrieval explainer that
shows what a bot would be given. No ranking: wiki items in file order, then
diary entries newest day first.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from wikimem.errors import InvalidValue

__all__ = ["TextHit", "TextSearch", "compile_query", "MAX_QUERY"]

MAX_QUERY = 200


@dataclass
class TextHit:
    """One wiki item or diary entry holding every word of the query; ``spans`` are the matches in ``content``."""

    kind: str  # "wiki" | "diary"
    content: str
    file: str | None = None
    name: str | None = None
    date: str | None = None
    time: str | None = None
    spans: list[tuple[int, int]] = field(default_factory=list)
    name_spans: list[tuple[int, int]] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class TextSearch:
    """The hits of one query (at most ``limit``) and how many there were in all."""

    query: str
    hits: list[TextHit]
    total: int

    def to_dict(self) -> dict:
        return {"query": self.query, "hits": [h.to_dict() for h in self.hits], "total": self.total}


def compile_query(query: str) -> list[re.Pattern]:
    """One case-insensitive pattern per whitespace-separated word of ``query``."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidValue("give some text to search for")
    if len(query) > MAX_QUERY:
        raise InvalidValue(f"the search text is longer than {MAX_QUERY} characters")
    return [re.compile(re.escape(word), re.IGNORECASE) for word in dict.fromkeys(query.split())]


def spans(patterns: list[re.Pattern], text: str) -> list[tuple[int, int]]:
    """Every match of every pattern in ``text``, sorted and merged where they overlap."""
    found = sorted((m.start(), m.end()) for p in patterns for m in p.finditer(text) if m.end() > m.start())
    merged: list[tuple[int, int]] = []
    for start, end in found:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def matches(patterns: list[re.Pattern], *texts: str) -> bool:
    """Whether every pattern occurs in one of ``texts``."""
    return all(any(p.search(t) for t in texts if t) for p in patterns)
