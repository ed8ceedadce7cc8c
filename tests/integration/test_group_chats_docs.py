"""The group chats documentation (issue 34), run as written: the README section's Python example prints what it
shows (README.md's "Group chats"), and the explanation's
metadata comment and ``excluded`` answer are what the code writes and answers."""

from __future__ import annotations

import contextlib
import io
import json
import tempfile

from apiworld import ADMIN, auth
from docblocks import doc_block, doc_blocks


def test_the_readme_group_chats_example_prints_what_it_shows(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # (the example's mkdtemp lands in this test's folder)
    examples, shown = doc_blocks("readme-group-chats"), doc_blocks("readme-group-chats-printed")
    assert len(examples) == len(shown)
    for example, printed in zip(examples, shown):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(example.text, example.path, "exec"), {"__name__": "group_chats_example"})
        assert out.getvalue() == printed.text, out.getvalue()


def test_the_metadata_comment_shown_is_what_the_diary_writes(tmp_path):
    from wikimem import MemoryStore

    store = MemoryStore(tmp_path / "a")
    store.diary.append("A, B and Kai planned a violin concert", date="2026-07-21", time="10:00", owner="user:a",
                       ts="2026-07-21T10:00:00+00:00", channel="g1", present=["user:a", "user:b", "char:kai"])
    written = (tmp_path / "a" / "diary" / "2026-07-21.md").read_text()
    assert doc_block("group-chats-metadata") in written
    [entry] = MemoryStore(tmp_path / "a").diary.window("2026-07-21", "2026-07-21")
    assert (entry.channel, entry.present) == ("g1", ("user:a", "user:b", "char:kai"))


def test_the_retrieve_shown_answers_the_excluded_count_shown(tmp_path):
    from webapp import create_app
    from webapp.hosting import get_host

    app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": ADMIN})
    client = app.test_client()
    assert client.put("/api/v1/characters/kai", headers=auth(ADMIN), json={"name": "Kai"}).status_code in (200, 201)
    with app.app_context():
        a, _ = get_host().ensure_owner("user:a")
        a.diary_append("A told Kai a violin secret", character="kai", channel="dm", present=["user:a", "char:kai"])
        a.diary_append("A, B and Kai planned a violin concert", character="kai", channel="g1",
                       present=["user:a", "user:b", "char:kai"])
    body = json.loads(doc_block("group-chats-retrieve"))
    r = client.post("/api/v1/owners/user:a/retrieve", headers=auth(ADMIN), json=body)
    assert r.status_code == 200, r.get_json()
    answer = r.get_json()
    assert {"excluded": answer["excluded"]} == json.loads("{" + doc_block("group-chats-excluded") + "}")
    assert [hit["item"]["content"] for hit in answer["items"]] == ["A, B and Kai planned a violin concert"]
