"""Content-free turns: greetings, acknowledgements, a few characters of filler (:func:`is_content_free`).

In a chat memory, "Maya: Hello Tom! How are you doing today?" or "Tom: Haha,
nice!" share the frame of many questions ("how", "doing", "today") and, being
short, rank high — above the turn that holds the answer. A turn is content
free when every term left after its speaker label and the names of the
file's speakers is a function word (:mod:`~wikimem.recall.stopwords`) or a
word of small talk (:data:`FILLER_WORDS`; in Chinese a term made only of
:data:`FILLER_CHARS` and function characters: 你好, 哈哈, 谢谢, 好的, 没问题).
A question with content ranks such turns after every turn with content
(:meth:`~wikimem.recall.index.MemoryIndex.retrieve`); a question made only of
question words ("how are you?") ranks them as before.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .stopwords import CHINESE_CHARS, ENGLISH, FRAME_WORDS
from .tokenizer import cached_terms

__all__ = ["FILLER_WORDS", "FILLER_CHARS", "is_content_free", "speaker_of"]

FILLER_WORDS = frozenset("""
hello hi hey hiya yo greetings morning evening night goodnight bye goodbye cya later soon thanks thank thx ty
welcome np sure ok okay k kk yeah yea yep yup yes no nope nah alright right fine good great nice cool awesome
amazing wow oh ah aw aww uh um hmm hm haha hahaha lol lmao hehe omg same totally true indeed exactly agreed
sounds glad happy hear see talk doing today well pretty really much lot also just still anyway guess think know
mean please sorry asking ask been
""".split()) | FRAME_WORDS
FILLER_CHARS = frozenset("你您好呀啊哈嗯谢拜早晚安哦噢嘿哇喔嗨对是行可以真棒厉害今天过得"
                         "最近还怎样也都很挺不错哎诶嘻呵久见问题唉听着开心懂意思时间快多说周～~")

_LABEL = re.compile(r"\s*([^\s:：\[\]#|]{1,24})\s*[:：]\s*")


def speaker_of(text: str) -> str | None:
    """The speaker label a turn starts with (``Maya: …``, ``志强：…``), or None."""
    m = _LABEL.match(text)
    return m[1] if m else None


def _filler(term: str) -> bool:
    if term[0] < "\u3000":
        return term in ENGLISH or term in FILLER_WORDS
    return all(c in CHINESE_CHARS or c in FILLER_CHARS for c in term)


def is_content_free(text: str, names: Iterable[str] = (), *, use_jieba: bool = False) -> bool:
    """True when ``text`` holds nothing but small talk (its speaker label and ``names`` — the speakers of
    its conversation — aside)."""
    m = _LABEL.match(text)
    if m:
        text = text[m.end():]
    for name in names:
        if name:
            text = text.replace(name, " ")
    return all(_filler(t) for t in cached_terms(text, use_jieba))
