"""Function words dropped from *query* terms (never from the index).

Design notes: docs/explanation/recall-internals.md (``wikimem/recall/stopwords.py``).
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["ENGLISH", "CHINESE_CHARS", "CHINESE_WORDS", "FRAME_WORDS", "FRAME_CHARS", "QUESTION_WORDS",
           "QUESTION_CHARS", "LANGUAGES", "is_function_term", "content_terms", "topic_terms", "question_only",
           "check_languages"]

# Tokens as the tokenizer makes them: lowercase, apostrophes split ("don't" → "don", "t").
ENGLISH = frozenset("""
a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing done down during each else ever few for from
further get gets got had has have having he her here hers herself him himself his how i if in into
is it its itself just let lets me might more most must my myself no nor not now of off on once only
or other ought our ours ourselves out over own same shall she should so some such than that the
their theirs them themselves then there these they this those through to too under until up upon us
very was we were what whatever when whenever where whereas whether which while who whom whose why
will with within without would yet you your yours yourself yourselves
s t d ll m re ve don doesn didn isn aren wasn weren hasn haven hadn won wouldn shouldn couldn
oh ok okay yeah yes hey hi
""".split())

# Characters that (almost) never carry the topic of a Chinese question on their own.
CHINESE_CHARS = frozenset(
    "的了着过是在有和与及或而且但就都也还又再才很太更最把被给让叫对从向往到于以为"
    "之其所吗呢吧啊呀哦嗯哈么吗啦嘛"
    "我你您他她它们咱这那哪谁啥什怎么样些个"
    "一不没"
)

# Function words that are not made only of function characters.
CHINESE_WORDS = frozenset("""
什么 怎么 怎样 怎么样 为什么 为何 哪里 哪儿 哪个 哪些 多少 几个 是否 是不是 有没有
时候 的时 一下 一些 一点 这样 那样 这么 那么 还是 或者 而且 但是 因为 所以 如果 虽然
然后 之后 之前 以后 以前 已经 曾经 知道 觉得 告诉 说过 提到 提过 记得 问题 事情 东西
自己 大家 别人 一起 可以 可能 应该 需要 想要 就是 不是 没有 有点 有些 真的 其实
""".split())


# The frame of a question about what happened (a time question): these say
# "something happened", not what. English words, and Chinese characters
# that make a frame term when every character of it is a frame or function one.
FRAME_WORDS = frozenset("""
do does did doing done go goes going went gone happen happens happened happening up
""".split())
FRAME_CHARS = frozenset("做干去来发生事情忙弄搞待呆得")

# What a time question may ask about without naming a topic: meals, talk, fun, parts of the day.
QUESTION_WORDS = frozenset("""
eat ate eaten eating have has had having get got anything something everything fun interesting new special
talk talked talking chat chatted say said tell told play played busy stuff thing things spend spent time
breakfast lunch dinner supper brunch meal meals morning afternoon evening night noon
""".split())
QUESTION_CHARS = frozenset("吃喝聊说讲谈玩饭餐早中午晚上下夜天啥些都过有")

LANGUAGES = ("en", "zh")


def check_languages(value: object) -> tuple[str, ...]:
    """``query_stopwords`` as the languages whose function words go: True = both, False = none."""
    if value is True:
        return LANGUAGES
    if value is False or value is None:
        return ()
    names = value.split(",") if isinstance(value, str) else value
    langs: tuple[str, ...] = ("?",)
    if isinstance(names, (list, tuple, frozenset, set)):
        langs = tuple(dict.fromkeys(str(n).strip() for n in names))
    if not langs or any(lang not in LANGUAGES for lang in langs):
        raise ValueError(f"query_stopwords must be True, False, 'en', 'zh' or 'en,zh', got {value!r}")
    return langs


def _cjk(term: str) -> bool:
    return term[0] >= "\u3000"


def is_function_term(term: str, languages: Iterable[str] = LANGUAGES) -> bool:
    """True for an English or Chinese function word (a tokenizer term, lowercase).

    ``languages``: only these languages' function words count.
    """
    if not term:
        return True
    if not _cjk(term):
        return "en" in languages and term in ENGLISH
    return "zh" in languages and (term in CHINESE_WORDS or all(c in CHINESE_CHARS for c in term))


def content_terms(terms: Iterable[str], languages: Iterable[str] = LANGUAGES) -> list[str]:
    """``terms`` without function words (of ``languages``); all of them when nothing else is left."""
    terms = list(terms)
    langs = tuple(languages)
    kept = [t for t in terms if not is_function_term(t, langs)]
    return kept if kept else terms


def _frame(term: str) -> bool:
    if not term:
        return True
    if not _cjk(term):
        return term in ENGLISH or term in FRAME_WORDS
    return term in CHINESE_WORDS or all(c in CHINESE_CHARS or c in FRAME_CHARS for c in term)


def topic_terms(terms: Iterable[str]) -> list[str]:
    """The terms of a time question that name its topic: no function or frame word, possibly none."""
    return [t for t in terms if not _frame(t)]


def _question(term: str) -> bool:
    if _frame(term):
        return True
    if not _cjk(term):
        return term in QUESTION_WORDS
    return all(c in CHINESE_CHARS or c in FRAME_CHARS or c in QUESTION_CHARS for c in term)


def question_only(terms: Iterable[str]) -> bool:
    """True when every term is a question word (or there is none): the window answers, whatever matches."""
    return all(_question(t) for t in terms)
