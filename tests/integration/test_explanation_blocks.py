"""The blocks of the design notes (docs/explanation/*.md written for issue 32) are what the code does: each one
claimed here by its marker name (``tests/unit/test_doc_blocks.py``)."""

from __future__ import annotations

import io
import json
import logging
import math
import re

from docblocks import doc_block

from wikimem.recall.lexical.bm25 import BM25Index, idf


def test_the_api_client_block_runs():
    exec(compile(doc_block("api-client-construct"), "api-client.md", "exec"), {})


def test_the_bm25_formulas_are_the_index_s():
    assert "ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))" in doc_block("bm25-idf")
    assert idf(10, 3) == math.log(1 + (10 - 3 + 0.5) / (3 + 0.5))
    assert "tf(t,d)·(k1+1) / (tf(t,d) + k1·(1 − b + b·|d|/avgdl))" in doc_block("bm25-score")
    index = BM25Index(use_numpy=False)
    index.extend([("a", ["sea", "sea", "calm"]), ("b", ["coffee", "tea"]), ("c", ["sea", "sky", "blue", "bird"])])
    k1, b, avgdl, tf, dl = index.k1, index.b, 3.0, 2, 3
    expected = idf(3, 2) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
    assert math.isclose(dict(index.top_k(["sea"], None))["a"], expected)


def test_the_smoothing_formula_is_smooth_s():
    from wikimem.recall.smoothing import smooth

    assert doc_block("smoothing-formula").strip() == "s'(i) = s(i) + weight · max(s(i − 1), s(i + 1))"
    raw = {1: 1.0, 2: 3.0, 3: 0.5}
    out = dict(smooth([(2, 3.0)], 0.5, lambda k: tuple(n for n in (k - 1, k + 1) if n in raw),
                      lambda keys: {k: raw[k] for k in keys}))
    assert out == {1: 1.0 + 0.5 * 3.0, 2: 3.0 + 0.5 * 1.0, 3: 0.5 + 0.5 * 3.0}


def test_a_tokens_file_line_as_shown_is_read(tmp_path):
    from wikimem.host.access import hash_secret, list_tokens

    line = json.loads(doc_block("tokens-file-line").replace("<64 hex>", hash_secret("s3cret")))
    path = tmp_path / "tokens.jsonl"
    path.write_text(json.dumps(line) + "\n")
    [entry] = list_tokens(path)  # (read as it is, whether its expiry is past by now or not)
    assert entry.sha256 == hash_secret("s3cret") and entry.expires == "2026-10-19T06:30:00+00:00"
    assert (entry.principal.name, set(entry.principal.scopes), entry.principal.owner_prefix) == \
        ("worker-1", {"read", "write"}, "user:")


def test_an_operators_file_line_as_shown_is_read(tmp_path):
    from wikimem.host.access import list_accounts

    path = tmp_path / "operators.jsonl"
    path.write_text(doc_block("operators-file-line"))
    [account] = list_accounts(path)
    assert (account.name, account.role, account.owner_prefix) == ("alice", "operator", "user:")


def test_an_audit_line_has_the_fields_shown():
    from webapp.logs import AppJsonFormatter
    from wikimem.host import audit

    shown = set(re.findall(r'"(\w+)":', doc_block("audit-json-line")))
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(AppJsonFormatter())
    handler.addFilter(lambda record: setattr(record, "request_id", "-") or True)
    logger = logging.getLogger("wikimem.audit")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        audit("revert", actor="alice", owner="user:ann")
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    assert set(json.loads(out.getvalue().splitlines()[-1])) == shown


def test_a_backup_folder_is_laid_out_as_shown(tmp_path):
    from wikimem.host import make_backup, make_host

    host = make_host(tmp_path / "data")
    host.create_owner("user:ann").add("prefs", "tea", "green")
    make_backup(host.root, tmp_path / "dest")
    shown = set(re.findall(r"── (\w+)/", doc_block("backup-layout")))
    assert shown == {p.name for p in (tmp_path / "dest").iterdir()}


def test_a_block_of_a_wiki_file_is_laid_out_as_shown():
    from wikimem.format import parse_wiki, render_wiki
    from wikimem.models import RecallItem

    data = render_wiki("prefs", [RecallItem("prefs", "tea", "green", owner="ann", source_conv="c1",
                                            ts="2026-07-21T06:30:00+00:00")])
    assert data is not None
    text = data.decode()
    shown = [line for line in doc_block("block-layout").splitlines() if line]
    lines = [line for line in text.splitlines() if line and not line.startswith("# ")]
    assert lines[0] == "## tea" and shown[0] == "## heading"
    assert lines[1] == "green" and shown[1] == "content (stripped)"
    assert lines[2].startswith("<!-- wikimem:") and shown[2].startswith("<!-- wikimem:")
    assert parse_wiki(text.encode(), "prefs")[0].source_conv == "c1"
