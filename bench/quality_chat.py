"""What should a bot send as the query: the user's turns (``messages``) or a pasted transcript? (issue 23, item 6)

    .venv/bin/python bench/quality_chat.py               # en + zh, BM25 and fused host defaults
    .venv/bin/python bench/quality_chat.py --no-dense

Every question of ``bench/quality.py`` is asked the way a chat bot meets
it: at the end of a short chat — the user's small talk, the character's
reply (three sentences of chatter), then the question. The small talk
comes from another conversation of the corpus: the same kind of words,
but not turns this memory holds. The query
is built four ways from the same chat:

- ``question`` — the last user turn alone (the ceiling: a bot that knows
  which sentence to search for);
- ``messages`` — ``retrieve(messages=…)``: the user's turns, oldest first
  (what the API builds, :func:`wikimem.llm.transcript.query_from_messages`);
- ``messages last=1`` — ``messages_last: 1``;
- ``transcript`` — the chat pasted as one text, ``user: … / assistant: …``.

Paired on the same questions against ``messages``.
"""

from __future__ import annotations

import random
import re
import shutil
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quality  # noqa: E402
from quality import BM25_HOST, HOST_VARIANT, Outcome, make_index, print_pairs  # noqa: E402

from wikimem.llm.transcript import query_from_messages  # noqa: E402

FORMS = ("question", "messages", "messages last=1", "transcript")
_LABEL = re.compile(r"^[^:：]{1,24}[:：]\s*")


def chat_of(question: str, chatter: list[str], rng: random.Random) -> list[dict]:
    """A short chat that ends with the question: small talk, the character's reply, the question."""
    opener, *reply = rng.sample(chatter, 4)
    return [{"role": "user", "content": opener},
            {"role": "assistant", "content": " ".join(reply)},
            {"role": "user", "content": question}]


def query_of(form: str, messages: list[dict]) -> str:
    if form == "question":
        return messages[-1]["content"]
    if form == "messages":
        return query_from_messages(messages)
    if form == "messages last=1":
        return query_from_messages(messages, last=1)
    return "\n".join(f"{m['role']}: {m['content']}" for m in messages)


def chatter_of(conv: dict) -> list[str]:
    """The conversation's turns that answer no question (small talk), without speaker labels."""
    evidence = {tuple(e) for q in conv["questions"] for e in q["evidence"]}
    return [_LABEL.sub("", t["content"]) for s in conv["sessions"] for t in s["turns"]
            if (s["file"], t["name"]) not in evidence]


def run(lang: str, args, embedders: dict) -> dict[str, Outcome]:
    data = quality.json.loads((quality.DATA / f"{lang}.json").read_text(encoding="utf-8"))
    bases = [replace(BM25_HOST, name="bm25 host")] + ([HOST_VARIANT] if embedders else [])
    outcomes = {f"{'fused' if b.embedder else 'bm25'} {form}": Outcome() for b in bases for form in FORMS}
    rng = random.Random(23)
    tmp = Path(tempfile.mkdtemp(prefix=f"quality-chat-{lang}-"))
    try:
        convs = data["conversations"][: args.conversations]
        for n, conv in enumerate(convs):
            store = quality.write_store(tmp / conv["id"], conv)
            # small talk of another conversation: the same kind of words, but not turns this memory holds
            chatter = chatter_of(data["conversations"][(n + 1) % len(data["conversations"])])
            chats = [chat_of(q["question"], chatter, rng) for q in conv["questions"]]
            for base in bases:
                index = make_index(store, base, embedders, Path(args.cache) / lang / conv["id"])
                label = "fused" if base.embedder else "bm25"
                for q, chat in zip(conv["questions"], chats):
                    wanted = {tuple(e) for e in q["evidence"]}
                    for form in FORMS:
                        result = index.retrieve(query_of(form, chat), limit=10, expand_links=False)
                        outcomes[f"{label} {form}"].ranks.append(quality.rank_of(result, wanted))
                        outcomes[f"{label} {form}"].types.append(q["type"])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return outcomes


def main(argv=None) -> int:
    args = quality.parse_args(argv)
    embedders = quality.query_embedder(args)
    print("## The query of a chat: messages vs a pasted transcript (bench/quality_chat.py)")
    for lang in args.langs:
        outcomes = run(lang, args, embedders)
        for emb in embedders.values():
            emb.save()
        quality.print_quality(lang, outcomes)
        pairs = [(f"{label} messages", f"{label} {form}") for label in ("bm25", "fused")
                 for form in FORMS if form != "messages"]
        print_pairs(lang, outcomes, pairs, "each query form against messages")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
