"""`import wikimem` needs only the standard library."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("numpy", "flask", "dulwich", "jieba")


def heavy_modules_after(code: str) -> str:
    """Run ``code`` in a fresh interpreter; the optional dependencies it loaded, as printed."""
    code = "import sys, wikimem\n" + code + f"print([m for m in {HEAVY!r} if m in sys.modules])\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_import_wikimem_pulls_in_no_optional_dependency():
    assert heavy_modules_after(
        "s = wikimem.MemoryStore('/nonexistent-never-written')\n"
        "import wikimem.store.wiki, wikimem.store.diary, wikimem.store.journal, wikimem.format.blocks, wikimem.links\n"
    ) == "[]"


def test_public_names_resolve():
    import wikimem

    core = ["MemoryStore", "Journal", "Diary", "RecallItem", "DiaryItem", "WikiLink",
            "parse_wiki_links", "validate_file", "sanitize_item_name", "as_recall_item"]
    for name in core:
        assert getattr(wikimem, name) is not None
    assert set(core) <= set(wikimem.__all__)


def test_every_exported_name_resolves():
    import wikimem

    missing = [name for name in wikimem.__all__ if getattr(wikimem, name, None) is None]
    assert missing == []


def test_retrieval_and_the_cli_stay_light():
    assert heavy_modules_after(
        "from wikimem import MemoryIndex, MemoryStore\n"
        "MemoryIndex(MemoryStore('/nonexistent-never-written'), use_jieba=False).retrieve('x')\n"
        "import wikimem.cli; wikimem.cli.build_parser()\n"
    ) == "[]"
