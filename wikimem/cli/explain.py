"""``explain QUERY``: run retrieval and show why each memory was chosen.

Ranked hits with their scores and matched terms, link expansions under
their parent hit, token estimates, the budget cut, dangling links, and a
``time gate:`` line on every run.

A host owner (``--owner``) is opened through the configured host and searched
with the host's recall settings and embedder (``WIKIMEM_TOKENIZER``,
``WIKIMEM_DIARY_RECALL`` …), as the API would; the flags given override them.
"""

from __future__ import annotations

import argparse

from wikimem.recall import MemoryIndex, RetrievalResult, RetrievedItem

from . import EXIT_NOT_FOUND, EXIT_OK, open_owner
from .browse import open_store

_SNIPPET = 72


def register(sub) -> None:
    p = sub.add_parser("explain", help="show what retrieval returns for a query, and why")
    p.add_argument("query")
    p.add_argument("--limit", type=_non_negative, default=10, help="hits before link expansion (default 10)")
    p.add_argument("--budget", type=_non_negative, default=None, metavar="TOKENS", help="token budget")
    p.add_argument("--no-links", action="store_true", help="do not expand wiki-links")
    jieba = p.add_mutually_exclusive_group()
    jieba.add_argument("--jieba", dest="jieba", action="store_true", default=None,
                       help="segment Chinese with jieba (bigrams if it is missing)")
    jieba.add_argument("--no-jieba", dest="jieba", action="store_false", help="Chinese character bigrams")
    p.add_argument("--time-range", type=_time_range, default=None, metavar="START..END",
                   help="diary window of local dates, e.g. 2026-07-20..2026-07-21 (or one date)")
    p.add_argument("--tz", default=None, help="time zone for words like 昨天 (default: local)")
    p.add_argument("--diary", choices=("window", "all"), default=None,
                   help="window: the diary only through a time window (default; a host owner: $WIKIMEM_DIARY_RECALL); "
                        "all: every entry ranked with the wiki")
    p.add_argument("--recency-half-life", type=_positive_days, default=None, metavar="DAYS",
                   help="with --diary all: favour recent entries (score × 0.5 + 0.5·2^(−age/DAYS))")
    p.add_argument("--stopwords", action="store_true", default=None,
                   help="drop function words from the query terms "
                        "(a host owner: on unless $WIKIMEM_QUERY_STOPWORDS=off)")
    p.set_defaults(handler=cmd_explain)


def _positive_days(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of days: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0: {text}")
    return value


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more: {value}")
    return value


def _time_range(text: str) -> tuple[str, str]:
    from wikimem.naming import validate_date

    start, sep, end = text.partition("..")
    if not sep:
        end = start
    try:
        return validate_date(start.strip()), validate_date(end.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{exc} (expected START..END, e.g. 2026-07-20..2026-07-21)") from None


def _index(args) -> MemoryIndex:
    if not args.owner:
        return MemoryIndex(open_store(args), use_jieba=args.jieba, query_stopwords=bool(args.stopwords))
    owner = open_owner(args)
    options = owner.recall.kwargs() if owner.recall is not None else {}
    options["embed_in_background"] = False  # the answer now: a command does not outlive a background embedding
    for key, flag in (("use_jieba", args.jieba), ("query_stopwords", args.stopwords)):
        if flag is not None:
            options[key] = flag
    return MemoryIndex(owner.store, embedder=owner.embedder, **options)


def cmd_explain(args) -> int:
    index = _index(args)
    result = index.retrieve(args.query, limit=args.limit, budget_tokens=args.budget,
                            expand_links=not args.no_links, explain=True,
                            time_range=args.time_range, tz=args.tz, diary=args.diary,
                            recency_half_life=args.recency_half_life)
    for line in render(result):
        print(line)
    return EXIT_OK if result.items else EXIT_NOT_FOUND


def render(result: RetrievalResult) -> list[str]:
    """The explain report, line by line."""
    lines = [f"query terms: {' '.join(result.query_terms) if result.query_terms else '(none)'}",
             _time_gate(result),
             _embedding(result)]
    if not result.items:
        lines.append("no memories found")
    rank = 0
    for entry in result.items:
        if entry.source == "hit":
            rank += 1
        lines += _entry(entry, rank)
    lines.append(_budget(result))
    if result.dropped:
        lines.append(f"dropped by the budget ({len(result.dropped)}):")
        for entry in result.dropped:
            lines.append(f"    {entry.source:<4} {_ref(entry)}  tokens={entry.tokens_est}")
    if result.unresolved_links:
        lines.append("dangling links: " + " ".join(result.unresolved_links))
    return lines


def _embedding(result: RetrievalResult) -> str:
    line = f"embedding: {'used' if result.embedding_used else 'off (BM25 only)'}"
    if result.vectors is not None:
        line += f"; vectors {result.vectors['embedded']} of {result.vectors['total']} embedded"
    return line


def _time_gate(result: RetrievalResult) -> str:
    if result.time_range is None:
        if result.diary == "all":
            return "time gate: off (no time window; every diary entry is searched)"
        return "time gate: off (no time window; the diary is not searched)"
    start, end = result.time_range
    window = start if start == end else f"{start}..{end}"
    note = "; it was empty, so widened one day each side" if result.time_range_widened else ""
    return f"time gate: {window} ({result.time_range_source}{note})"


def _ref(entry: RetrievedItem) -> str:
    tag = "diary " if entry.kind == "diary" else ""
    return f"{tag}{entry.item.file}:{entry.item.name}"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _snippet(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _SNIPPET else flat[: _SNIPPET - 1] + "…"


def _entry(entry: RetrievedItem, rank: int) -> list[str]:
    if entry.source == "hit":
        scores = f"score={_num(entry.score)} bm25={_num(entry.bm25_score)}"
        if entry.cos_score is not None:
            scores += f" cos={_num(entry.cos_score)}"
        head = f"{rank:>3}. hit  {_ref(entry)}  {scores}  tokens={entry.tokens_est}"
    else:
        parent = f"{entry.via_file}:{entry.via}" if entry.via_file else entry.via
        head = f"     -> link {_ref(entry)}  (via {parent})  tokens={entry.tokens_est}"
    lines = [head]
    if entry.matched_terms:
        lines.append(f"          matched: {', '.join(entry.matched_terms)}")
    lines.append(f"          {_snippet(entry.item.content)}")
    return lines


def _budget(result: RetrievalResult) -> str:
    if result.budget_tokens is None:
        return f"budget: none; {result.budget_used} tokens in {len(result.items)} entries"
    return (f"budget: {result.budget_used} of {result.budget_tokens} tokens used; "
            f"{len(result.items)} kept, {len(result.dropped)} dropped")
