"""``explain QUERY``: run retrieval and show why each memory was chosen.

Upstream wikimem's report: ``query``, ``query tokens``, ``ranking`` and
``time gate`` lines (on every run, so a narrowed search is never silent),
then a table — rank, ``hit`` or ``link``, score, BM25, cosine, tokens, the
item, its matched terms or ``(via parent)`` — the budget line (``budget:
used N / LIMIT``, what was dropped) and the unresolved links; ``no results``
(exit 1) when nothing is found.

A host owner (``--owner``) is opened through the configured host and searched
with the host's recall settings and embedder (``WIKIMEM_TOKENIZER``,
``WIKIMEM_DIARY_RECALL`` …), as the API would; the flags given override them.
``--character ID`` recalls as that character, as the API's retrieve does (its
layer, the shared layer and its profile ranked as one, each entry marked with
its layer; the host's recall settings then hold); in a ``--store`` folder it
searches the layer folder ``characters/ID/`` alone.
"""

from __future__ import annotations

import argparse

from wikimem.recall import MemoryIndex, RetrievalResult, RetrievedItem

from . import EXIT_NOT_FOUND, EXIT_OK, layer_of, open_owner
from .browse import open_store


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
    p.set_defaults(handler=cmd_explain, layered=True)


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
    options = {"limit": args.limit, "budget_tokens": args.budget, "expand_links": not args.no_links, "explain": True,
               "time_range": args.time_range, "tz": args.tz, "diary": args.diary,
               "recency_half_life": args.recency_half_life}
    character = layer_of(args)
    if args.owner and character is not None:  # recall as the character, through the host (its indexes, its settings)
        if args.jieba is not None or args.stopwords is not None:
            raise ValueError("--jieba and --stopwords do not go with --character on a host owner: the host's recall "
                             "settings hold")
        result = open_owner(args).retrieve(args.query, character=character, **options)
    else:
        result = _index(args).retrieve(args.query, **options)
    for line in render(result, args.query):
        print(line)
    return EXIT_OK if result.items else EXIT_NOT_FOUND


def render(result: RetrievalResult, query: str = "") -> list[str]:
    """The explain report, line by line (upstream wikimem's shape: a header, a table of hits and links, the
    budget, the dangling links)."""
    lines = [f"query: {query}",
             f"query tokens: {', '.join(result.query_terms) if result.query_terms else '(none)'}",
             _ranking(result), _time_gate(result)]
    if not result.items:
        return lines + ["", "no results"]
    lines += ["", "  #  src      score     bm25    cos  ~tok  item"]
    rank = 0
    for entry in result.items:
        rank += entry.source == "hit"
        lines.append(_row(entry, rank))
    lines += ["", _budget(result)]
    if result.dropped:
        lines.append(f"dropped ({len(result.dropped)}): " + ", ".join(_ref(e) for e in result.dropped))
    if result.unresolved_links:
        lines.append("unresolved links: " + " ".join(result.unresolved_links))
    return lines


def _ranking(result: RetrievalResult) -> str:
    line = "ranking: BM25 + cosine fusion (embedding: on)" if result.embedding_used else \
        "ranking: BM25 (embedding: off)"
    if result.vectors is not None:
        line += f"; vectors {result.vectors['embedded']} of {result.vectors['total']} embedded"
    return line


def _time_gate(result: RetrievalResult) -> str:
    if result.time_range is None:
        if result.diary == "all":
            return "time gate: none (whole store; every diary entry is searched)"
        return "time gate: none (whole store)"
    start, end = result.time_range
    window = " ".join(result.time_days) if result.time_days else start if start == end else f"{start}..{end}"
    note = "  (widened: window was empty)" if result.time_range_widened else ""
    return f"time gate: {window}  [{result.time_range_source}]{note}"


def _ref(entry: RetrievedItem) -> str:
    tag = "diary " if entry.kind == "diary" else ""
    where = "" if entry.layer is None else f"({entry.character if entry.layer == 'character' else entry.layer}) "
    return f"{where}{tag}{entry.item.file}:{entry.item.name}"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _row(entry: RetrievedItem, rank: int) -> str:
    """One row of the table: a hit with its scores and matched terms, or a link under its parent."""
    head = f"{rank if entry.source == 'hit' else '':>3}  {entry.source:<4} {_num(entry.score):>8} " \
           f"{_num(entry.bm25_score):>8} {_num(entry.cos_score):>6} {entry.tokens_est:>5}  {_ref(entry)}"
    if entry.source == "link":
        return f"{head}  (via {entry.via})"
    terms = entry.matched_terms
    shown = ", ".join(terms[:3]) + (", ..." if len(terms) > 3 else "")
    return f"{head}  [{shown}]" if terms else head


def _budget(result: RetrievalResult) -> str:
    limit = "no limit" if result.budget_tokens is None else str(result.budget_tokens)
    return f"budget: used {result.budget_used} / {limit}"
