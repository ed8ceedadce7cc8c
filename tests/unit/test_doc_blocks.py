"""Every code block of the README and of the documentation site is run or checked by a test (issue 36).

A block carries a marker (``<!-- test: NAME -->`` or ``<!-- output: NAME -->``, see
:mod:`docblocks`) and some test claims NAME: a test module that reads the blocks
(imports :mod:`docblocks`) names it as a literal string. A block without a marker, or a
name no test claims, fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

from docblocks import ROOT, all_blocks, documents

TESTS = Path(__file__).resolve().parents[1]
LITERAL = re.compile(r"""["']([a-z0-9][a-z0-9-]*)["']""")


def claimed() -> set[str]:
    """Every string literal of the test modules that read the documentation's blocks."""
    out: set[str] = set()
    for path in TESTS.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if path.name != "docblocks.py" and re.search(r"^from docblocks import|^\s+from docblocks import", text, re.M):
            out |= set(LITERAL.findall(text))
    return out


def test_every_block_has_a_marker():
    unmarked = [f"{b.path}:{b.line}" for b in all_blocks() if b.name is None]
    assert unmarked == [], "mark each block <!-- test: NAME --> (and test it) or <!-- output: NAME -->"


def test_every_marked_block_is_claimed_by_a_test():
    names = {b.name for b in all_blocks()}
    assert names, "no block found: the scan is broken"
    assert sorted(names - claimed()) == []


def test_no_indented_code_block_hides_from_the_scan():
    """Four-space code blocks have no place for a marker: the documentation uses fences only."""
    found = []
    for doc in documents():
        lines = doc.read_text(encoding="utf-8").splitlines()
        fenced = False
        for i, line in enumerate(lines):
            if line.lstrip().startswith(("```", "~~~")):
                fenced = not fenced
                continue
            previous = lines[i - 1] if i else ""
            starts_list = re.match(r"\s*([-*]|\d+\.)\s", previous) or previous.startswith("    ")
            if not fenced and line.startswith("    ") and not previous.strip() and not starts_list and i > 1 \
                    and not re.match(r"\s*([-*]|\d+\.|<!--|!!!|\|)", line) and not lines[i - 2].startswith(" "):
                found.append(f"{doc.relative_to(ROOT)}:{i + 1}")
    assert found == []


def test_the_markers_stand_before_a_block():
    stray = []
    for doc in documents():
        lines = doc.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if re.match(r"\s*<!-- (test|output): ", line):
                following = next((x for x in lines[i + 1:] if x.strip()), "")
                if not following.lstrip().startswith(("```", "~~~")):
                    stray.append(f"{doc.relative_to(ROOT)}:{i + 1}")
    assert stray == []
