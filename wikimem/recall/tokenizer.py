"""Tokenisation for retrieval, and the token estimate used by the budget:
:func:`tokenize` (:func:`cached_terms` remembers recent texts), :func:`est_tokens`,
:func:`item_text` (what of an item is searched), :func:`jieba_available`.

Latin text becomes lowercased ``[a-z0-9]+`` words. CJK text (Han, kana,
Hangul) becomes character bigrams — a lone CJK character is its own token,
and punctuation or any other character ends a run, so no bigram crosses it —
or jieba words when the ``[zh]`` extra is importable and allowed.

Tokenising is linear in the input for any text: jieba segments only runs of
at most :data:`JIEBA_MAX_RUN` characters; a longer run (no punctuation for
hundreds of characters — a paste, a log, an attack) becomes bigrams, whose
cost is linear by construction.
"""

from __future__ import annotations

import importlib.util
import logging
import re
import threading
from functools import lru_cache
from typing import Any

__all__ = ["tokenize", "cached_terms", "est_tokens", "item_text", "jieba_available", "JIEBA_MAX_RUN"]

# Longest CJK run handed to jieba. Real sentences between punctuation are far
# shorter; beyond it jieba's cost per character grows (DAG + HMM over one
# huge run) while its words stop mattering for ranking.
JIEBA_MAX_RUN = 256

# Han (basic, extension A, compatibility, the supplementary planes),
# hiragana, katakana and Hangul syllables.
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0003134f"
_TOKEN_RE = re.compile(f"[a-z0-9]+|[{_CJK}]+")
_LATIN_RE = re.compile("[a-z0-9]+")
# est_tokens: one per CJK character, one per run of other letters/digits.
_CJK_CHAR_RE = re.compile(f"[{_CJK}]")
_OTHER_WORD_RE = re.compile(f"[^\\W_{_CJK}]+")
_ASCII_WORD_RE = re.compile("[A-Za-z0-9]+")

_jieba = None
_jieba_state = None  # None: not probed yet; True/False: importable or not
_jieba_lock = threading.Lock()


def jieba_available() -> bool:
    """True when jieba can be imported (probed without importing it)."""
    global _jieba_state
    if _jieba_state is None:
        try:
            _jieba_state = importlib.util.find_spec("jieba") is not None
        except (ImportError, ValueError):  # blocked or half-imported module
            _jieba_state = False
    return _jieba_state


def _load_jieba():
    """The jieba module, imported on first use; None when it cannot be."""
    global _jieba, _jieba_state
    if _jieba is None and jieba_available():
        with _jieba_lock:
            if _jieba is None:
                try:
                    import jieba
                except Exception:  # a broken install degrades to bigrams, never fails
                    _jieba_state = False
                    return None
                # jieba logs its dictionary loading at DEBUG to stderr by default.
                jieba.setLogLevel(logging.WARNING)
                _jieba = jieba
    return _jieba


def _bigrams(run: str, out: list[str]) -> None:
    if len(run) == 1:
        out.append(run)
    else:
        out.extend(run[i:i + 2] for i in range(len(run) - 1))


def tokenize(text: str, *, use_jieba: bool | None = None) -> list[str]:
    """The retrieval terms of ``text``, in order of appearance.

    ``use_jieba=None`` uses jieba when it is importable, ``True`` asks for it
    (bigrams if it is missing), ``False`` always uses bigrams — reproducible
    across machines.
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a string, got {type(text).__name__}")
    lowered = text.lower()
    if lowered.isascii():  # the common case: one C-level pass
        return _LATIN_RE.findall(lowered)
    jieba = _load_jieba() if use_jieba or (use_jieba is None and jieba_available()) else None
    out: list[str] = []
    for token in _TOKEN_RE.findall(lowered):
        if token[0] < "\u0080":  # ASCII: a latin word
            out.append(token)
        elif jieba is not None and len(token) <= JIEBA_MAX_RUN:
            out.extend(w for w in jieba.lcut(token) if not w.isspace())
        else:
            _bigrams(token, out)
    return out


@lru_cache(maxsize=8192)
def cached_terms(text: str, use_jieba: bool) -> tuple[str, ...]:
    """:func:`tokenize`, remembered for recent texts.

    Diary window entries are tokenised per query (the seed's mode does not
    index them); most windows repeat.
    """
    return tuple(tokenize(text, use_jieba=use_jieba))


def item_text(item: Any) -> str:
    """What retrieval searches and estimates of an item or diary entry: its name, a newline, its content."""
    return item.name + "\n" + item.content


def est_tokens(text: str) -> int:
    """A rough LLM token count: one per word, one per CJK character.

    Stable rather than exact — it decides budget cuts, not bills. Words of
    scripts other than latin and CJK (Cyrillic, accented runs...) count one
    per run too, so no text is estimated as free.
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a string, got {type(text).__name__}")
    if text.isascii():
        return len(_ASCII_WORD_RE.findall(text))
    return len(_CJK_CHAR_RE.findall(text)) + len(_OTHER_WORD_RE.findall(text))
