"""Retrieval results ready for a prompt (issue 24 item 15): diary hits name their date and time as the
diary does, and :meth:`RetrievalResult.to_prompt` turns the entries into text within a token budget."""

from __future__ import annotations

import pytest

from wikimem import MemoryIndex, MemoryStore
from wikimem.recall import RetrievalResult, RetrievedItem, est_tokens


@pytest.fixture
def mem(store) -> MemoryStore:
    store.add("pets", "biscuit", "Our dog Biscuit, a beagle. See [[people:mia]].")
    store.add("people", "mia", "Mia walks Biscuit on Sundays.")
    store.diary.append("Took Biscuit to the vet,\nhe hates the car.", date="2026-12-03", time="20:30")
    return store


def test_a_diary_hit_carries_its_date_and_time(mem):
    result = MemoryIndex(mem, use_jieba=False).retrieve("vet beagle", diary="all")
    hit = next(e for e in result.items if e.kind == "diary")
    assert (hit.kind, hit.date, hit.time) == ("diary", "2026-12-03", "20:30")
    item = result.to_dict()["items"][result.items.index(hit)]["item"]
    # additive: file and name stay as they were; date and time as the diary routes answer them
    assert (item["file"], item["name"], item["date"], item["time"]) == ("2026-12-03", "20:30", "2026-12-03", "20:30")
    wiki = next(e for e in result.items if e.kind == "wiki")
    assert (wiki.date, wiki.time) == (None, None) and "date" not in wiki.to_dict()["item"]


def test_to_prompt_labels_each_entry_and_keeps_injection_order(mem):
    result = MemoryIndex(mem, use_jieba=False).retrieve("Biscuit vet", diary="all")
    text = result.to_prompt(heading="What you remember about the user:")
    lines = text.splitlines()
    assert lines[0] == "What you remember about the user:"
    assert "- [diary 2026-12-03 20:30] Took Biscuit to the vet," in lines
    assert "  he hates the car." in lines  # a later line of the same entry, indented
    assert "- [pets/biscuit] Our dog Biscuit, a beagle. See [[people:mia]]." in lines
    assert "- [people/mia] Mia walks Biscuit on Sundays." in lines  # the link target, after its hit
    order = [e.to_text().splitlines()[0] for e in result.items]
    assert [line for line in lines if line.startswith("- [")] == order


@pytest.mark.parametrize("budget", [1, 12, 20, 30, 1000])
def test_to_prompt_stays_within_the_budget(mem, budget):
    result = MemoryIndex(mem, use_jieba=False).retrieve("Biscuit vet", diary="all")
    text = result.to_prompt(budget, strict=True)
    assert est_tokens(text) <= budget
    blocks = [e.to_text() for e in result.items]
    kept = text.split("\n- [")
    assert text == "" or text == "\n".join(blocks[:len(kept)])  # a prefix of the entries, whole blocks only
    loose = result.to_prompt(budget)
    assert loose.startswith(blocks[0])  # the first entry always survives unless strict, as in retrieve
    assert est_tokens(loose) <= max(budget, est_tokens(blocks[0]))


def test_to_prompt_defaults_to_the_results_own_budget(mem):
    index = MemoryIndex(mem, use_jieba=False)
    result = index.retrieve("Biscuit vet", diary="all", budget_tokens=25)
    assert est_tokens(result.to_prompt()) <= 25
    assert result.to_prompt(budget_tokens=10_000) == "\n".join(e.to_text() for e in result.items)
    assert RetrievalResult().to_prompt(heading="Memories:") == ""  # nothing to say: no heading either


def test_a_result_rebuilt_by_the_client_renders_the_same_text(mem):
    from wikimem.client.results import retrieval_result

    result = MemoryIndex(mem, use_jieba=False).retrieve("Biscuit vet", diary="all")
    rebuilt = retrieval_result(result.to_dict())
    assert rebuilt.to_prompt(40) == result.to_prompt(40)
    assert [(e.date, e.time) for e in rebuilt.items] == [(e.date, e.time) for e in result.items]
    assert isinstance(rebuilt.items[0], RetrievedItem)
