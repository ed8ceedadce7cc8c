"""Imports (issue 37): a 1,000-message chat memorized with a stand-in model, and 100 character cards.

Each is compared with its reference in the same run, on the same machine:

- **chat**: the SillyTavern chat of ``--messages`` messages (500 turns for 1,000) imported as one job and one run
  (``host.imports.import_chat``: the job, each turn memorized under its own key, progress reports) vs the same
  turns memorized by a loop of ``Owner.memorize`` (one run, the same stand-in model on 127.0.0.1, no job): wall
  time, model calls, seconds per turn, and the import's own share (parse + preview + submit);
- **cards**: ``--cards`` V2 cards, each with a lorebook of ``--entries`` entries, imported (preview + one commit in
  ``char:<id>``) vs registering as many characters with ``Characters.put`` (one settings commit, no items);
  then the same cards imported again (nothing changed: no commit).

``.venv/bin/python bench/imports.py [--messages 1000] [--cards 100] [--entries 20]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from cardfiles import long_chat, lore_entry, stand_in_reply, v2_card  # noqa: E402
from fakes import FakeOpenAI  # noqa: E402

from wikimem.context import WriteContext  # noqa: E402
from wikimem.host import make_host  # noqa: E402
from wikimem.llm import ChatClient  # noqa: E402


def bench_chat(messages: int, llm: FakeOpenAI) -> list[tuple[str, float, int, int]]:
    rows = []
    chat = long_chat(messages)
    with tempfile.TemporaryDirectory(prefix="wikimem-bench-imports-") as tmp:
        host = make_host(Path(tmp) / "data", llm=ChatClient(llm.url, "fake-chat", timeout=30))
        host.imports.import_card(json.dumps(v2_card()).encode())
        ann, ref = host.create_owner("user:ann"), host.create_owner("user:ref")
        # the reference: the same turns, memorized one after the other, as one run
        turns = host.imports.read_chat(ref, chat, "UTC")[0].turns
        calls, start = llm.chat_calls, time.perf_counter()
        for turn in turns:
            ref.memorize(turn.text(), character="kai", ctx=WriteContext(run="run_ref", actor="import"),
                         ts=turn.when.isoformat(), tz="UTC")
        rows.append(("Owner.memorize loop (reference)", time.perf_counter() - start, llm.chat_calls - calls,
                     len(turns)))
        calls, start = llm.chat_calls, time.perf_counter()
        job, _, preview = host.imports.import_chat(ann, "kai", chat, tz="UTC")
        submitted = time.perf_counter() - start
        while host.jobs.get(job.id).state in ("queued", "running"):
            time.sleep(0.1)
        assert host.jobs.get(job.id).state == "done"
        rows.append(("import job (parse, preview, submit, run)", time.perf_counter() - start, llm.chat_calls - calls,
                     preview.turns))
        rows.append(("  of which parse + preview + submit", submitted, 0, preview.turns))
        assert ann.diary_dates("kai") == ref.diary_dates("kai")
    return rows


def bench_cards(count: int, entries: int) -> list[tuple[str, float, list[float]]]:
    cards = [json.dumps(v2_card(f"Character {i}", character_book={"extensions": {}, "entries": [
        lore_entry([f"key {i}-{j}", f"alias {j}"], f"Entry {j} of character {i}: " + "lore " * 40, comment=f"e{j}")
        for j in range(entries)]})).encode() for i in range(count)]
    rows = []
    with tempfile.TemporaryDirectory(prefix="wikimem-bench-cards-") as tmp:
        host = make_host(Path(tmp) / "data")
        times = []
        for i in range(count):
            start = time.perf_counter()
            host.characters.put(f"ref-{i}", name=f"Reference {i}", persona="A persona. " * 20)
            times.append(time.perf_counter() - start)
        rows.append(("Characters.put (reference: a definition, no items)", sum(times), times))
        for label in ("import_card (preview + one commit)", "import_card again (unchanged: no commit)"):
            times = []
            for raw in cards:
                start = time.perf_counter()
                host.imports.import_card(raw)
                times.append(time.perf_counter() - start)
            rows.append((label, sum(times), times))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=1000)
    ap.add_argument("--cards", type=int, default=100)
    ap.add_argument("--entries", type=int, default=20, help="lorebook entries per card")
    args = ap.parse_args()
    with FakeOpenAI() as llm:
        llm.reply_fn = stand_in_reply
        chat = bench_chat(args.messages, llm)
    print(f"## A {args.messages:,}-message chat, stand-in model on 127.0.0.1\n")
    print("| how | seconds | model calls | turns | ms per turn | × reference |\n|---|---:|---:|---:|---:|---:|")
    for label, seconds, calls, turns in chat:
        print(f"| {label} | {seconds:.2f} | {calls} | {turns} | {1000 * seconds / turns:.1f} | "
              f"{seconds / chat[0][1]:.2f} |")
    cards = bench_cards(args.cards, args.entries)
    print(f"\n## {args.cards} cards of {args.entries} lorebook entries each\n")
    print("| how | seconds | ms per card (median) | ms per card (max) | × reference |\n|---|---:|---:|---:|---:|")
    for label, seconds, times in cards:
        print(f"| {label} | {seconds:.2f} | {1000 * statistics.median(times):.1f} | {1000 * max(times):.1f} | "
              f"{seconds / cards[0][1]:.2f} |")


if __name__ == "__main__":
    main()
