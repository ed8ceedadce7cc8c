"""Text with the matches of a search marked (presentation only: the host found the spans)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Run", "marked"]


@dataclass(frozen=True)
class Run:
    """A stretch of text, matched or not."""

    text: str
    hit: bool


def marked(text: str, spans) -> list[Run]:
    """``text`` cut into matched and unmatched stretches at ``spans`` (sorted, non-overlapping ``(start, end)``)."""
    out, at = [], 0
    for start, end in spans:
        if start > at:
            out.append(Run(text[at:start], False))
        out.append(Run(text[start:end], True))
        at = end
    if at < len(text):
        out.append(Run(text[at:], False))
    return out
