"""The staged-run index on SQLite and on a cluster's PostgreSQL: recorded per owner, settled by how the run went,
held by an operator, summed per run, and due for the policy by age."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from wikimem.host.fleet import StagedIndex


@dataclass
class Run:
    run: str
    actor: str | None = "memorize-v7"
    source_conv: str | None = None
    first: str = "2026-07-21T10:00:00Z"
    last: str = "2026-07-21T10:05:00Z"
    commits: int = 1
    changes: int = 2
    tip: str = "a" * 40


@pytest.fixture(params=["sqlite", "postgres"])
def index(request, tmp_path):
    target = str(tmp_path / "staged.sqlite3") if request.param == "sqlite" else request.getfixturevalue("database_url")
    made = StagedIndex(target)
    yield made
    made.close()


def test_the_index_records_settles_holds_and_sums_runs(index):
    index.sync("user:a", [Run("run_1"), Run("run_2", first="2026-07-22T10:00:00Z")], {})
    index.sync("user:b", [Run("run_1", changes=3)], {})
    assert index.known(["user:a", "user:b", "user:c"]) == {"user:a": {"run_1": "a" * 40, "run_2": "a" * 40},
                                                             "user:b": {"run_1": "a" * 40}, "user:c": {}}
    assert index.hold("run_1", True, owners=["user:b"]) == 1
    lines = {x["run"]: x for x in index.summary()}
    assert (lines["run_1"]["owners"], lines["run_1"]["changes"], lines["run_1"]["held"]) == (2, 5, 1)
    assert index.waiting() == {"runs": 2, "owners": 3, "oldest": "2026-07-21T10:00:00Z"}
    assert index.waiting(within="user:b") == {"runs": 1, "owners": 1, "oldest": "2026-07-21T10:00:00Z"}
    cutoff = 1784628000  # 2026-07-21T10:00:00Z
    assert index.due(cutoff) == ["run_1"]  # user:a's copy is not held
    index.sync("user:a", [Run("run_2", first="2026-07-22T10:00:00Z")],
               {"run_1": {"Action": "approve", "Approved-By": "alice", "commit": "c" * 40,
                          "time": "2026-07-21T11:00:00Z"}})
    index.sync("user:b", [], {"run_1": {"Action": "discard", "Actor": "bob", "Reason": "expired", "commit": "d" * 40}})
    states = {(r.owner, r.state, r.settled_by, r.held) for r in index.rows(run="run_1", state=None)}
    assert states == {("user:a", "approved", "alice", False), ("user:b", "expired", "bob", False)}
    assert index.due(cutoff) == [] and index.waiting()["runs"] == 1
    index.sync("user:a", [], {})
    assert [r.state for r in index.rows(run="run_2", state=None)] == ["gone"]
    index.forget("user:a")
    assert index.rows(state=None, owner_prefix="user:a") == []
