"""Before/after texts of one item, marked up for reading a change.

Pure presentation: the git layer decides *what* changed (per item); this
only highlights *where* inside the text, so an operator sees the words
that a memorize run added or removed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher

__all__ = ["Piece", "InlineDiff", "inline_diff", "tokens"]

# ASCII words stay whole (a word-level diff reads best for latin text); every
# other character is its own token, so CJK text diffs by character.
_TOKEN_RE = re.compile(r"[A-Za-z0-9_]+|\s+|.", re.S)
# SequenceMatcher is quadratic in the worst case; above this many tokens the
# diff falls back to lines, and above it again to "all removed, all added".
MAX_TOKENS = 4000


@dataclass(frozen=True)
class Piece:
    """A run of text that is the same on both sides, or only on one."""

    kind: str  # "same" | "del" | "ins"
    text: str


@dataclass(frozen=True)
class InlineDiff:
    before: list[Piece]
    after: list[Piece]


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
