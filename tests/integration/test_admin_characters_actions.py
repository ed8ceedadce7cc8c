"""The characters' pages and what operators do about a character (issue 33 point 7): register and change one through
the gate, its profile and its runs across persons, approve its proposal to the shared layer, roll back its runs
across persons; reviewers may look but not change; hostile definitions are escaped."""

from __future__ import annotations

import logging
import re
import sys
import time
from pathlib import Path

import pytest
from apiworld import ADMIN
from markupsafe import escape

from webapp import create_app
from webapp.hosting import get_host
from webapp.session import account_line
from wikimem.host import RunQuery, make_host

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared world of a layered person
from fakes import ScriptedLLM  # noqa: E402
from layered_world import MEMORIZE_REPLY, MEMORIZED_DIARY, MEMORIZED_FACT, PERSON, memorize_as, seed_layers  # noqa: E402
from test_admin_characters import PASSWORD, client_as, csrf  # noqa: E402  (signing in, as the layer pages' tests do)
from test_admin_characters import page as text_of  # noqa: E402

PERSONS = (PERSON, "user:bob", "user:cy")


@pytest.fixture
def world(tmp_path):
    """Three persons whose folders Kai, Mira and Elaina share; Kai memorized one turn with each (a run per person,
    each proposing its fact to the shared layer); the app over the same data root."""
    root = tmp_path / "data"
    writer = make_host(root, llm=ScriptedLLM(*[MEMORIZE_REPLY] * len(PERSONS)))
    runs = {person: memorize_as(seed_layers(writer, person), "kai").run for person in PERSONS}
    operators = tmp_path / "operators.jsonl"
    operators.write_text("".join(account_line(*who, role=role) + "\n" for who, role in (
        (("rita", PASSWORD), "reviewer"), (("olga", PASSWORD), "operator"),
        (("zed", PASSWORD, "user:z"), "admin"))), encoding="utf-8")
    app = create_app({"TESTING": True, "DATA_ROOT": str(root), "ADMIN_TOKEN": ADMIN,
                      "OPERATORS_FILE": str(operators)})
    yield app, runs
    with app.app_context():
        get_host().start_jobs().stop()


def wait_done(client, url: str) -> str:
    deadline = time.monotonic() + 60
    while 'data-state="done"' not in (found := client.get(url).get_data(as_text=True)):
        assert time.monotonic() < deadline, found[:3000]
        time.sleep(0.1)
    return found


def test_the_run_index_finds_a_characters_runs_in_its_layer(world):
    """A run that wrote only a character's layer is a run of the person: the run index must see it."""
    app, runs = world
    with app.app_context():
        found = get_host().fleet.find_runs(RunQuery.parse(character="kai"), limit=50).runs
    memorized = {(r.owner, r.run) for r in found if r.run}
    assert memorized == set(runs.items()) and all(r.characters == ["kai"] for r in found)
    assert {r.owner for r in found if r.run is None} == set(PERSONS)  # the seeded secret, one commit each


def test_the_character_page_shows_its_definition_profile_and_runs(world):
    app, runs = world
    client = client_as(app)
    listing = text_of(client, "/admin/characters")
    assert all(f'data-character="{c}"' in listing for c in ("kai", "mira", "elaina"))
    page = text_of(client, "/admin/characters/kai")
    assert str(escape("A cheerful barista <b>who remembers</b> every order.")) in page  # the persona, as text
    assert "<b>who remembers</b>" not in page
    assert "Kai works at the harbour café." in page and 'href="/admin/owners/char:kai"' in page  # its profile
    assert all(run in page for run in runs.values())  # its runs across persons
    assert re.search(r'class="total-owners">3<', page)
    assert 'href="/admin/bulk/rollback?character=kai"' in page and 'href="/admin/runs?character=kai"' in page
    mira = text_of(client, "/admin/characters/mira")
    assert not any(run in mira for run in runs.values())  # Mira's runs are only its own
    assert text_of(client, "/admin/runs", character="kai").count('class="badge layer layer-character"') >= 3


def test_changing_a_definition_is_one_commit_through_the_gate(world, caplog):
    app, _ = world
    client = client_as(app)
    page = text_of(client, "/admin/characters/kai")
    form = {"csrf_token": csrf(page), "name": "Kai <i>II</i>", "persona": "<script>x()</script> A barista.",
            "shared_writes": "direct"}
    with caplog.at_level(logging.INFO, logger="wikimem.audit"):
        r = client.post("/admin/characters/kai", data=form)
    assert r.status_code == 302 and r.headers["Location"].endswith("/admin/characters/kai")
    events = [x.getMessage() for x in caplog.records if x.name == "wikimem.audit"]
    assert [e for e in events if "character-put actor=admin owner=char:kai result=ok via=operator" in e], events
    with app.app_context():
        kai = get_host().characters.get("kai")
        assert (kai.name, kai.persona, kai.shared_writes) == ("Kai <i>II</i>", "<script>x()</script> A barista.",
                                                              "direct")
        head = get_host().owner("char:kai").history(limit=1).entries[0]
        assert head.actor == "admin" and head.id == kai.head
    shown = text_of(client, "/admin/characters/kai")
    assert "<script>x()</script>" not in shown and str(escape("<script>x()</script>")) in shown
    assert "Kai <i>II</i>" not in shown
    again = client.post("/admin/characters/kai", data={**form, "csrf_token": csrf(shown)})
    assert again.status_code == 302  # the same definition again: nothing to commit
    with app.app_context():
        assert get_host().owner("char:kai").history(limit=1).entries[0].id == head.id
    bad = client.post("/admin/characters/kai", data={**form, "csrf_token": csrf(shown), "shared_writes": "always"})
    assert bad.status_code == 422 and 'id="definition-error"' in bad.get_data(as_text=True)
    assert 'value="always"' not in bad.get_data(as_text=True)


def test_registering_a_character_from_the_page(world):
    app, _ = world
    client = client_as(app)
    page = text_of(client, "/admin/characters")
    r = client.post("/admin/characters", data={"csrf_token": csrf(page), "id": "nova", "name": "Nova",
                                               "persona": "", "shared_writes": "none"})
    assert r.status_code == 302 and r.headers["Location"].endswith("/admin/characters/nova")
    with app.app_context():
        nova = get_host().characters.get("nova")
        assert (nova.name, nova.persona, nova.shared_writes, nova.deleted) == ("Nova", None, "none", False)
    again = client.post("/admin/characters", data={"csrf_token": csrf(page), "id": "nova", "name": "Nova 2"})
    assert again.status_code == 409 and "registered already" in again.get_data(as_text=True)
    bad = client.post("/admin/characters", data={"csrf_token": csrf(page), "id": "No<b>va", "name": "x"})
    assert bad.status_code == 422 and "No<b>va" not in bad.get_data(as_text=True)
    assert client.post("/admin/characters", data={"id": "zeta", "name": "Zeta"}).status_code == 400  # no CSRF


def test_a_characters_proposal_shows_who_made_it_and_approving_shares_it(world):
    app, runs = world
    client = client_as(app)
    run = runs[PERSON]
    listing = text_of(client, "/admin/staged")
    assert run in listing and "kai-bot" in listing  # the proposal waits, with its actor
    run_page = text_of(client, f"/admin/staged/{run}")
    assert 'proposed by character <a class="character-link" href="/admin/characters/kai"><b>kai</b>' in run_page
    owner_page = text_of(client, f"/admin/owners/{PERSON}/staged/{run}")
    assert 'id="proposed-by"' in owner_page and MEMORIZED_FACT in owner_page
    assert f'href="/admin/owners/{PERSON}/runs/{run}"' in owner_page  # what the run wrote in Kai's layer
    layer_run = text_of(client, f"/admin/owners/{PERSON}/runs/{run}")
    assert MEMORIZED_DIARY in layer_run and 'id="run-proposal"' in layer_run  # both halves of the run, linked
    assert MEMORIZED_FACT not in text_of(client, f"/admin/owners/{PERSON}/search", q="surf", character="mira")
    r = client.post(f"/admin/owners/{PERSON}/staged/{run}/approve", data={"csrf_token": csrf(owner_page)})
    assert r.status_code == 302 and "/commits/" in r.headers["Location"]
    with app.app_context():
        owner = get_host().owner(PERSON)
        assert owner.item("hobbies", "surfing").content == MEMORIZED_FACT  # in the shared layer now
        assert run not in [x.run for x in owner.staged_runs()]
    assert MEMORIZED_FACT in text_of(client, f"/admin/owners/{PERSON}/search", q="surf", character="mira")
    assert 'id="run-proposal"' not in text_of(client, f"/admin/owners/{PERSON}/runs/{run}")


def test_rolling_back_a_characters_runs_across_persons_from_its_page(world):
    app, runs = world
    client = client_as(app)
    preview = text_of(client, "/admin/bulk/rollback", character="kai")
    assert "Roll back 9 runs of 3 owners?" in preview  # in each person: a memorize, the seeded secret and diary
    form = {"csrf_token": csrf(preview), "character": "kai",
            "request_id": re.search(r'name="request_id" value="([^"]+)"', preview).group(1)}
    r = client.post("/admin/bulk/rollback", data=form)
    assert r.status_code == 302 and "/admin/jobs/job_" in r.headers["Location"]
    assert wait_done(client, r.headers["Location"]).count("result-done") == 3
    with app.app_context():
        for person in PERSONS:
            owner = get_host().owner(person)
            assert owner.items(None, "kai") == [] and owner.diary_dates("kai") == []  # Kai's layer undone
            assert [i.name for i in owner.items(None, "mira")] == ["code-word"]  # the others' untouched
            assert owner.item("people", "ann").content.startswith("Ann lives by the sea.")
    page = text_of(client, "/admin/characters/kai")
    assert page.count('class="undone"') >= 3  # its runs, marked rolled back


def test_a_reviewer_may_look_but_not_change(world):
    app, runs = world
    client = client_as(app, "rita")
    with app.app_context():
        head = get_host().owner("char:kai").head()
    page = text_of(client, "/admin/characters/kai")
    assert 'id="read-only"' in page and '<fieldset class="plain" disabled' in page
    assert 'id="bulk-rollback-character"' not in page
    assert client.post("/admin/characters/kai", data={"csrf_token": csrf(page), "name": "Evil"}).status_code == 403
    listing = text_of(client, "/admin/characters")
    assert client.post("/admin/characters", data={"csrf_token": csrf(listing), "id": "evil",
                                                  "name": "Evil"}).status_code == 403
    staged = text_of(client, f"/admin/owners/{PERSON}/staged/{runs[PERSON]}")
    assert client.post(f"/admin/owners/{PERSON}/staged/{runs[PERSON]}/approve",
                       data={"csrf_token": csrf(staged)}).status_code == 403
    assert client.post("/admin/bulk/rollback", data={"csrf_token": csrf(listing), "character": "kai"}).status_code \
        == 403
    operator = client_as(app, "olga")  # the operator role edits items, not characters
    assert operator.post("/admin/characters/kai", data={"csrf_token": csrf(text_of(operator, "/admin/characters/kai")),
                                                        "name": "Evil"}).status_code == 403
    with app.app_context():
        assert get_host().owner("char:kai").head() == head and not get_host().characters.exists("evil")
        assert runs[PERSON] in [x.run for x in get_host().owner(PERSON).staged_runs()]


def test_an_admin_limited_to_some_owners_sees_no_profile_or_runs_outside_them(world):
    app, _ = world
    client = client_as(app, "zed")  # owners user:z* only
    page = text_of(client, "/admin/characters/kai")
    assert "Kai works at the harbour café." not in page and "outside the owners you may see" in page
    assert not any(p in page for p in PERSONS) and 'id="no-runs"' in page
    r = client.post("/admin/characters/kai", data={"csrf_token": csrf(page), "name": "Kai"})
    assert r.status_code == 403
