"""tokenize / est_tokens: latin words, CJK bigrams or jieba, the token estimate."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wikimem import est_tokens, tokenize
from wikimem.recall.tokenizer import jieba_available

CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0003134f]")


@pytest.mark.parametrize("text, expected", [
    ("Likes the SEA", ["likes", "the", "sea"]),
    ("likes_the-sea, 2026!", ["likes", "the", "sea", "2026"]),
    ("e-mail: A.B@c.d", ["e", "mail", "a", "b", "c", "d"]),
    ("", []),
    ("!!! ... ？？", []),
    ("海", ["海"]),
    ("海边", ["海边"]),
    ("喜欢海边", ["喜欢", "欢海", "海边"]),
    # punctuation ends a run: no bigram "边，" or "边提"
    ("海边，提到", ["海边", "提到"]),
    ("去海边 beach玩", ["去海", "海边", "beach", "玩"]),
    ("ひらがなカタカナ", ["ひら", "らが", "がな", "なカ", "カタ", "タカ", "カナ"]),
    ("한국어", ["한국", "국어"]),
])
def test_bigram_tokens(text, expected):
    assert tokenize(text, use_jieba=False) == expected


def test_non_ascii_latin_letters_split_words():
    # [a-z0-9]+ only: an accented letter is not part of a word
    assert tokenize("naïve café", use_jieba=False) == ["na", "ve", "caf"]


@pytest.mark.skipif(not jieba_available(), reason="jieba not installed")
def test_jieba_words_when_asked():
    tokens = tokenize("我喜欢海边", use_jieba=True)
    assert "喜欢" in tokens and "海边" in tokens
    assert "欢海" not in tokens  # a bigram across the word boundary
    assert tokenize("Hello 海边", use_jieba=True)[0] == "hello"


@pytest.mark.skipif(not jieba_available(), reason="jieba not installed")
def test_auto_detect_uses_jieba_when_importable():
    assert tokenize("我喜欢海边") == tokenize("我喜欢海边", use_jieba=True)


def test_use_jieba_true_without_jieba_falls_back_to_bigrams():
    code = (
        "import sys; sys.modules['jieba'] = None\n"  # makes `import jieba` fail, as if absent
        "from wikimem import tokenize\n"
        "from wikimem.recall.tokenizer import jieba_available\n"
        "print(jieba_available(), tokenize('喜欢海边', use_jieba=True), tokenize('喜欢海边'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False ['喜欢', '欢海', '海边'] ['喜欢', '欢海', '海边']"


@pytest.mark.parametrize("text, expected", [
    ("", 0),
    ("hello world", 2),
    ("hello, world!!", 2),
    ("喜欢海边", 4),
    ("喜欢海边 and the sea", 7),
    ("2026-07-21 14:30", 5),
    ("Привет мир", 2),  # other scripts count one per word, never free
    ("... ？？", 0),
])
def test_est_tokens(text, expected):
    assert est_tokens(text) == expected


@pytest.mark.parametrize("bad", [None, 3, b"bytes"])
def test_non_string_input_is_a_clear_error(bad):
    with pytest.raises(ValueError):
        tokenize(bad)
    with pytest.raises(ValueError):
        est_tokens(bad)


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("abcXYZ019 _-,.!？。，海边喜欢去玩ひら한")), max_size=40))
def test_bigram_tokens_are_well_formed(text):
    tokens = tokenize(text, use_jieba=False)
    for tok in tokens:
        if CJK_RE.match(tok):
            assert 1 <= len(tok) <= 2 and all(CJK_RE.match(c) for c in tok)
            assert tok in text  # a bigram never crosses punctuation or a space
        else:
            assert re.fullmatch(r"[a-z0-9]+", tok)
            assert tok in text.lower()
    latin = [t for t in tokens if not CJK_RE.match(t)]
    cjk_chars = len(CJK_RE.findall(text))
    assert est_tokens(text) == len(latin) + cjk_chars  # one per latin word, one per CJK character


# -- bounded jieba: linear for any input ------------------------------------------


def _bigram_reference(run: str) -> list[str]:
    return [run] if len(run) == 1 else [run[i:i + 2] for i in range(len(run) - 1)]


@pytest.mark.skipif(not jieba_available(), reason="jieba not installed")
def test_a_huge_cjk_run_is_bigrams_even_with_jieba():
    from wikimem.recall.tokenizer import JIEBA_MAX_RUN

    run = "我们今天去海边玩了很开心喜欢咖啡工作公司机器人朋友家里吃饭看电影" * 10_000  # ~350k characters
    assert len(run) > 300_000 > JIEBA_MAX_RUN
    assert tokenize(run, use_jieba=True) == _bigram_reference(run)


@pytest.mark.skipif(not jieba_available(), reason="jieba not installed")
def test_only_the_runs_above_the_cap_fall_back_to_bigrams():
    from wikimem.recall.tokenizer import JIEBA_MAX_RUN

    long_run = "海边咖啡" * (JIEBA_MAX_RUN // 4 + 1)
    short_run = "我喜欢海边"
    tokens = tokenize(f"{short_run}，{long_run}。hello", use_jieba=True)
    head = tokenize(short_run, use_jieba=True)
    assert "喜欢" in head and "欢海" not in head  # jieba words below the cap
    assert tokens == head + _bigram_reference(long_run) + ["hello"]
    at_cap = ("我喜欢海边" * JIEBA_MAX_RUN)[:JIEBA_MAX_RUN]  # at the cap: still jieba's words
    assert "欢海" not in tokenize(at_cap, use_jieba=True)
    assert "欢海" in tokenize(at_cap + "我", use_jieba=True)  # one more character: bigrams
