"""Scopes of several owner prefixes (a token's ``owner_prefixes``): the helpers and the one SQL condition."""

from __future__ import annotations

import pytest

from wikimem.host import covers, reaches, scope_prefixes, scope_text, within_json, within_of
from wikimem.host.access import Principal
from wikimem.host.fleet.sql import Database, prefix_match


@pytest.mark.parametrize("given, canonical", [
    ("user:", "user:"), ([""], ""), (["user:"], "user:"), (["user:", "team:"], ("team:", "user:")),
    (["user:", "user:ann", "team:"], ("team:", "user:")), (["", "user:"], ""), ([], ()),
])
def test_one_canonical_form(given, canonical):
    assert within_of(given) == canonical


def test_reaching_covering_and_narrowing():
    both = ("team:", "user:")
    assert reaches(both, "user:ann") and reaches(both, "team:x") and not reaches(both, "org:x")
    assert reaches("", "org:x") and reaches(["team:"], "team:x")  # a list, as a job's JSON keeps it
    assert covers(both, "user:ann") and covers(both, both) and not covers("user:", both) and covers("", both)
    assert scope_prefixes(both, "") == both and scope_prefixes(both, "user:a") == ("user:a",)
    assert scope_prefixes(both, "org:") == () and scope_prefixes("user:ann", "user:") == ("user:ann",)
    assert scope_text("user:") == "user:" and scope_text(both) == '["team:", "user:"]'
    assert within_json(both) == ["team:", "user:"] and within_json("") == ""


def test_a_principal_keeps_the_old_single_prefix_api():
    one = Principal("w", frozenset({"read"}), "user:")
    assert (one.owner_prefixes, one.owner_prefix, one.within, one.tenant) == (("user:",), "user:", "user:", "user:")
    two = Principal("w", frozenset({"read"}), ("user:", "team:", "user:ann"))
    assert two.owner_prefixes == ("team:", "user:") and two.within == ("team:", "user:")
    assert two.owner_prefix == "team:"  # the first: narrower than the token, never wider
    assert two.prefix_for("user:ann") == "user:" and two.prefix_for("org:x") is None
    assert two.reach() == "owners team:* or user:*" and Principal("a", frozenset({"read"})).reach() == "every owner"
    with pytest.raises(ValueError):
        Principal("w", frozenset({"read"}), ())


@pytest.mark.parametrize("prefixes, expected", [
    ((), []), (("",), ["org:a", "team:b", "user:a", "user_x"]), (("user:",), ["user:a"]),
    (("user:", "team:"), ["team:b", "user:a"]), (("user_",), ["user_x"]),  # '_' is literal, not LIKE's any-char
])
def test_the_sql_condition(tmp_path, prefixes, expected):
    db = Database(tmp_path / "t.sqlite", "t")
    db.execute("CREATE TABLE t (owner TEXT)")
    db.many("INSERT INTO t VALUES (?)", [("org:a",), ("team:b",), ("user:a",), ("user_x",)])
    cond, args = prefix_match("owner", prefixes)
    assert [r[0] for r in db.rows(f"SELECT owner FROM t WHERE {cond} ORDER BY owner", args)] == expected
