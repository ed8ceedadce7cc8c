"""Before/after texts of one item, marked up for reading a change.

Pure presentation: the git layer decides *what* changed (per item); this
only highlights *where* inside the text, so an operator sees the words
that a memorize run added or removed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher

__all__ = ["Piece", "InlineDiff", "inline_diff", "tokens", "DiffBudget", "PAGE_BUDGET"]

# ASCII words stay whole (a word-level diff reads best for latin text); every
# other character is its own token, so CJK text diffs by character.
_TOKEN_RE = re.compile(r"[A-Za-z0-9_]+|\s+|.", re.S)
# SequenceMatcher is quadratic in the worst case; above this many tokens (one
# side) the diff falls back to lines, and above it again to "all removed, all added".
MAX_TOKENS = 1500
# What one page may spend on highlighting (tokens on both sides, summed over
# its items): a commit of 40 items of 4,000 random characters each renders in
# well under a second; the items beyond the budget are shown without highlights.
PAGE_BUDGET = 40_000


@dataclass(frozen=True)
class Piece:
    """A run of text that is the same on both sides, or only on one."""

    kind: str  # "same" | "del" | "ins"
    text: str


@dataclass(frozen=True)
class InlineDiff:
    before: list[Piece]
    after: list[Piece]
    note: str | None = None  # why this one is not highlighted


def tokens(text: str) -> list[str]:
    """Split text into diff units: ASCII words, whitespace runs, single characters."""
    return _TOKEN_RE.findall(text)


def _units(before: str, after: str) -> tuple[list[str], list[str]]:
    a, b = tokens(before), tokens(after)
    if max(len(a), len(b)) <= MAX_TOKENS:
        return a, b
    a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
    if max(len(a), len(b)) <= MAX_TOKENS:
        return a, b
    return [before], [after]


def _append(pieces: list[Piece], kind: str, text: str) -> None:
    if not text:
        return
    if pieces and pieces[-1].kind == kind:
        pieces[-1] = Piece(kind, pieces[-1].text + text)
    else:
        pieces.append(Piece(kind, text))


def inline_diff(before: str | None, after: str | None) -> InlineDiff:
    """Mark what ``after`` removed from and added to ``before``.

    ``None`` means the item did not exist on that side: everything on the
    other side is then an addition (or a removal).
    """
    a, b = _units(before or "", after or "")
    old: list[Piece] = []
    new: list[Piece] = []
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            _append(old, "same", "".join(a[i1:i2]))
            _append(new, "same", "".join(b[j1:j2]))
        else:
            _append(old, "del", "".join(a[i1:i2]))
            _append(new, "ins", "".join(b[j1:j2]))
    return InlineDiff(old, new)


class DiffBudget:
    """``inline_diff`` for one page, with a bound on what the page spends on highlighting.

    Call it like :func:`inline_diff`. Once the page has spent
    :data:`PAGE_BUDGET` (tokens of both sides, summed), the remaining items
    are shown whole, unhighlighted, with a note saying so.
    """

    def __init__(self, budget: int = PAGE_BUDGET):
        self.left = budget

    def __call__(self, before: str | None, after: str | None) -> InlineDiff:
        cost = len(before or "") + len(after or "")
        if cost > self.left:
            self.left = 0
            note = "not highlighted: this page has spent its diff budget (open the item or the commit alone)"
            return InlineDiff([Piece("same", before)] if before else [], [Piece("same", after)] if after else [],
                              note)
        self.left -= cost
        return inline_diff(before, after)
