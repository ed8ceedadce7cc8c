"""The character registry (SPEC §11): the API routes, the CLI, resolve, limits, migration, audit events."""

from __future__ import annotations

import json
import logging
import subprocess

import pytest
from apiworld import ADMIN, auth

from wikimem.cli import main as cli
from wikimem.errors import InvalidName, NotFound
from wikimem.host import Caller, encode_owner_id, slug_of

C = "/api/v1/characters"
KAI = {"name": "Kai", "persona": "A cheerful barista who remembers every order.", "shared_writes": "staged"}


@pytest.fixture
def app(tmp_path, capsys):
    from webapp import create_app

    tokens = tmp_path / "tokens.jsonl"
    secrets = {}
    for name, args in (("reader", ["--scope", "read"]),
                       ("users-admin", ["--scope", "admin", "--owner-prefix", "user:"])):
        assert cli(["token", "mint", name, *args, "--file", str(tokens)]) == 0
        secrets[name] = capsys.readouterr().out.strip()
    app = create_app({"TESTING": True, "DATA_ROOT": str(tmp_path / "data"), "ADMIN_TOKEN": ADMIN,
                      "TOKENS_FILE": str(tokens)})
    app.secrets = secrets
    return app


def _git_log(app, owner: str) -> list[str]:
    folder = f"{app.config['DATA_ROOT']}/owners/{encode_owner_id(owner)}"
    done = subprocess.run(["git", "-C", folder, "log", "--format=%H %s", "main"], check=True, capture_output=True,
                          text=True)
    return done.stdout.splitlines()


def _events(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "wikimem.audit"]


def test_register_get_list_change_delete(app, caplog):
    client = app.test_client()
    with caplog.at_level(logging.INFO, logger="wikimem.audit"):
        r = client.put(f"{C}/kai", json=KAI, headers=auth(ADMIN))
        assert r.status_code == 201, r.get_json()
        body = r.get_json()
        assert body["created"] is True and body["commit"]
        kai = body["character"]
        assert (kai["id"], kai["owner"], kai["name"], kai["persona"], kai["shared_writes"], kai["deleted"]) == \
            ("kai", "char:kai", "Kai", KAI["persona"], "staged", False)
        assert kai["head"] == body["commit"] and kai["updated"]
        # The definition is a commit in char:kai, kept in its settings.json (git is the witness).
        log = _git_log(app, "char:kai")
        assert log[0] == f"{body['commit']} settings: definition=Kai (shared_writes=staged)"
        settings = client.get("/api/v1/owners/char:kai/settings", headers=auth(ADMIN)).get_json()["settings"]
        assert settings["definition"]["persona"] == KAI["persona"]
        # The same definition again: nothing to commit.
        again = client.put(f"{C}/kai", json=KAI, headers=auth(ADMIN))
        assert again.status_code == 200 and again.get_json()["commit"] is None and len(_git_log(app, "char:kai")) \
            == len(log)
        changed = client.put(f"{C}/kai", json={**KAI, "shared_writes": "direct"}, headers=auth(ADMIN))
        assert changed.status_code == 200 and changed.get_json()["created"] is False
        assert _git_log(app, "char:kai")[0].startswith(f"{changed.get_json()['commit']} settings: definition=Kai "
                                                       "(shared_writes=direct)")
        assert client.put(f"{C}/mira", json={"name": "Mira"}, headers=auth(ADMIN)).status_code == 201
        listed = client.get(C, headers=auth(app.secrets["reader"])).get_json()["characters"]
        assert [(c["id"], c["shared_writes"], c["persona"]) for c in listed] == \
            [("kai", "direct", KAI["persona"]), ("mira", "staged", None)]
        got = client.get(f"{C}/kai", headers=auth(app.secrets["reader"])).get_json()["character"]
        assert got == changed.get_json()["character"]
        gone = client.delete(f"{C}/kai", headers=auth(ADMIN))
        assert gone.status_code == 200 and gone.get_json()["character"]["deleted"] is True
        assert _git_log(app, "char:kai")[0].endswith("settings: definition=Kai (deleted)")
        assert client.delete(f"{C}/kai", headers=auth(ADMIN)).get_json()["commit"] is None  # already deleted
        events = [(e.audit, e.owner, e.result, getattr(e, "character", None)) for e in _events(caplog)]
    assert events == [("character-put", "char:kai", "ok", "kai")] * 3 + [("character-put", "char:mira", "ok", "mira")] \
        + [("character-delete", "char:kai", "ok", "kai")] * 2
    assert all(e.via == "token" and e.actor == "admin" for e in _events(caplog))


def test_a_deleted_character_says_so_and_can_be_registered_again(app):
    client = app.test_client()
    client.put(f"{C}/kai", json=KAI, headers=auth(ADMIN))
    client.delete(f"{C}/kai", headers=auth(ADMIN))
    assert client.get(f"{C}/kai", headers=auth(ADMIN)).get_json()["character"]["deleted"] is True
    assert client.get(C, headers=auth(ADMIN)).get_json()["characters"] == []
    assert [c["id"] for c in client.get(f"{C}?deleted=true", headers=auth(ADMIN)).get_json()["characters"]] == ["kai"]
    with app.app_context():
        from webapp.hosting import get_host

        with pytest.raises(NotFound, match="was deleted .* can no longer write"):
            get_host().characters.resolve("kai")
    back = client.put(f"{C}/kai", json=KAI, headers=auth(ADMIN))
    assert back.status_code == 201 and back.get_json()["character"]["deleted"] is False


@pytest.mark.parametrize("bad", ["Kai", "-kai", "k" * 65, "kai%20mira", "%E5%B0%8F%E8%89%BE"])
def test_a_malformed_id_is_422(app, bad):
    client = app.test_client()
    for r in (client.put(f"{C}/{bad}", json=KAI, headers=auth(ADMIN)), client.get(f"{C}/{bad}", headers=auth(ADMIN)),
              client.delete(f"{C}/{bad}", headers=auth(ADMIN))):
        assert r.status_code == 422, r.get_json()
        assert r.get_json()["error"]["code"] == "invalid_name" and "character id" in r.get_json()["error"]["message"]


def test_an_unknown_character_is_404_with_how_to_register_it(app):
    client = app.test_client()
    for r in (client.get(f"{C}/mira", headers=auth(ADMIN)), client.delete(f"{C}/mira", headers=auth(ADMIN))):
        assert r.status_code == 404
        message = r.get_json()["error"]["message"]
        assert "PUT /api/v1/characters/mira" in message and "wikimem character put mira --name" in message


@pytest.mark.parametrize("body, status", [
    ({}, 400), ({"name": "Kai", "colour": "red"}, 400), ({"name": 5}, 400), ({"name": "Kai", "persona": 5}, 400),
    ({"name": ""}, 422), ({"name": "two\nlines"}, 422), ({"name": "x" * 201}, 422),
    ({"name": "Kai", "shared_writes": "always"}, 422), ({"name": "Kai", "persona": "x" * 8001}, 422),
])
def test_a_bad_definition_is_refused_and_nothing_is_written(app, body, status):
    client = app.test_client()
    r = client.put(f"{C}/kai", json=body, headers=auth(ADMIN))
    assert r.status_code == status, r.get_json()
    assert client.get(f"{C}/kai", headers=auth(ADMIN)).status_code == 404


def test_scopes(app):
    client = app.test_client()
    reader, users_admin = app.secrets["reader"], app.secrets["users-admin"]
    assert client.put(f"{C}/kai", json=KAI, headers=auth(reader)).status_code == 403
    # An admin token over user:* does not reach char:kai, the character's own owner.
    r = client.put(f"{C}/kai", json=KAI, headers=auth(users_admin))
    assert r.status_code == 403 and "'user:'" in r.get_json()["error"]["message"]
    assert client.put(f"{C}/kai", json=KAI, headers=auth(ADMIN)).status_code == 201
    assert client.get(f"{C}/kai", headers=auth(users_admin)).status_code == 200  # the registry is the host's
    assert client.delete(f"{C}/kai", headers=auth(reader)).status_code == 403
    assert client.get(C).status_code == 401


def test_the_settings_route_never_takes_a_definition(app):
    client = app.test_client()
    client.put("/api/v1/owners/user:ann", headers=auth(ADMIN))
    r = client.put("/api/v1/owners/user:ann/settings", json={"definition": {"name": "Kai"}}, headers=auth(ADMIN))
    assert r.status_code == 400
    from wikimem.host.settings import check_settings

    with pytest.raises(ValueError, match="only on a character's own owner"):
        check_settings({"definition": {"name": "Kai"}}, owner_id="user:ann")
    assert check_settings({"definition": {"name": "Kai"}}, owner_id="char:kai")["definition"]["name"] == "Kai"


def test_characters_per_host_are_limited(app, monkeypatch):
    import wikimem.host.characters as characters

    monkeypatch.setattr(characters, "MAX_CHARACTERS", 2)
    client = app.test_client()
    for cid in ("kai", "mira"):
        assert client.put(f"{C}/{cid}", json={"name": cid.title()}, headers=auth(ADMIN)).status_code == 201
    r = client.put(f"{C}/elaina", json={"name": "Elaina"}, headers=auth(ADMIN))
    assert r.status_code == 422 and "2 character profiles, the most it keeps" in r.get_json()["error"]["message"]
    assert client.get(f"{C}/elaina", headers=auth(ADMIN)).status_code == 404
    # A registered one can still change, and a deleted one come back: their profiles are there already.
    assert client.put(f"{C}/kai", json={"name": "Kai K."}, headers=auth(ADMIN)).status_code == 200
    client.delete(f"{C}/mira", headers=auth(ADMIN))
    assert client.put(f"{C}/mira", json={"name": "Mira"}, headers=auth(ADMIN)).status_code == 201


# -- resolve: what memorize's character names ------------------------------------------------


def test_resolve(app):
    client = app.test_client()
    client.put(f"{C}/kai", json=KAI, headers=auth(ADMIN))
    with app.app_context():
        from webapp.hosting import get_host

        characters = get_host().characters
        assert characters.resolve("kai").name == "Kai"
        with pytest.raises(NotFound) as free_text:
            characters.resolve("Elaina the Witch")
        message = str(free_text.value)
        assert "not a registered character id" in message and "PUT /api/v1/characters/elaina-the-witch" in message
        assert "wikimem character migrate" in message
        with pytest.raises(NotFound, match="no character 'mira'; register it"):
            characters.resolve("mira")
        for bad in ("two\nlines", "", 5, "x" * 201):
            with pytest.raises(InvalidName):
                characters.resolve(bad)


@pytest.mark.parametrize("name, slug", [("Kai", "kai"), ("Elaina the Witch", "elaina-the-witch"),
                                        ("Zoë", "zoe"), ("小艾", "character"), ("  R2-D2!! ", "r2-d2"),
                                        ("_x", "_x"), ("x" * 100, "x" * 60)])
def test_slugs(name, slug):
    assert slug_of(name) == slug


# -- the command line ------------------------------------------------------------------------


def test_the_cli_registers_shows_lists_and_deletes(tmp_path, capsys, caplog):
    data = str(tmp_path / "data")
    persona = tmp_path / "persona.txt"
    persona.write_text("一个记得每一位客人点单的咖啡师。", encoding="utf-8")
    with caplog.at_level(logging.INFO, logger="wikimem.audit"):
        assert cli(["character", "put", "kai", "--name", "Kai", "--persona-file", str(persona), "--data", data]) == 0
        assert capsys.readouterr().out.startswith("registered kai (Kai, shared_writes=staged) in char:kai at ")
        assert cli(["character", "put", "mira", "--name", "Mira", "--shared-writes", "none", "--data", data]) == 0
        assert cli(["character", "list", "--data", data]) == 0
        rows = [line.split("\t")[:4] for line in capsys.readouterr().out.splitlines()[1:]]
        assert rows == [["kai", "Kai", "staged", "active"], ["mira", "Mira", "none", "active"]]
        assert cli(["character", "show", "kai", "--data", data]) == 0
        shown = json.loads(capsys.readouterr().out)
        assert shown["persona"] == persona.read_text(encoding="utf-8") and shown["owner"] == "char:kai"
        assert cli(["character", "delete", "kai", "--data", data]) == 0
        assert capsys.readouterr().out.startswith("deleted kai (Kai) at ")
        assert cli(["character", "list", "--data", data]) == 0
        assert [line.split("\t")[0] for line in capsys.readouterr().out.splitlines()] == ["mira"]
        assert cli(["character", "show", "nobody", "--data", data]) == 1
        assert "wikimem character put nobody --name" in capsys.readouterr().err
        assert cli(["character", "show", "Nobody", "--data", data]) == 2
        assert "invalid character id" in capsys.readouterr().err
        events = [(e.audit, e.owner, e.via, e.result) for e in _events(caplog)]
    assert events == [("character-put", "char:kai", "cli", "ok"), ("character-put", "char:mira", "cli", "ok"),
                      ("character-delete", "char:kai", "cli", "ok")]


# -- migration of free-text character settings ------------------------------------------------


@pytest.fixture
def settings_world(app):
    """Owners whose settings name their character by a free-text name (before the registry), and two
    characters registered already: mira ("Mira") and elaina (a different "Elaina Vale")."""
    client = app.test_client()
    for owner, character in (("user:ann", "Elaina"), ("user:bob", "Elaina"), ("user:cai", "小艾"),
                             ("user:dee", "Mira"), ("user:eve", "kai"), ("user:fay", None)):
        client.put(f"/api/v1/owners/{owner}", headers=auth(ADMIN))
        if character:
            client.put(f"/api/v1/owners/{owner}/settings", json={"character": character}, headers=auth(ADMIN))
    client.put(f"{C}/mira", json={"name": "Mira"}, headers=auth(ADMIN))
    client.put(f"{C}/elaina", json={"name": "Elaina Vale"}, headers=auth(ADMIN))
    return client


def _setting(client, owner):
    return client.get(f"/api/v1/owners/{owner}/settings", headers=auth(ADMIN)).get_json()["settings"]["character"]


def test_migrate_dry_run_changes_nothing(app, settings_world, capsys):
    heads = {o: _git_log(app, o)[0] for o in ("user:ann", "user:cai", "char:mira")}
    assert cli(["character", "migrate", "--dry-run", "--data", app.config["DATA_ROOT"]]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ["would register elaina-2 ('Elaina')",  # "elaina" names another character already
                   "  user:ann: would set character 'Elaina' -> elaina-2",
                   "  user:bob: would set character 'Elaina' -> elaina-2",
                   "'Mira' is mira",  # registered under that name: reused
                   "  user:dee: would set character 'Mira' -> mira",
                   "would register kai ('kai')",  # an id already: the setting stays as it is
                   "would register character ('小艾')",
                   "  user:cai: would set character '小艾' -> character"]
    assert {o: _git_log(app, o)[0] for o in heads} == heads
    assert _setting(settings_world, "user:ann") == "Elaina"


def test_migrate_registers_rewrites_and_is_idempotent(app, settings_world, capsys, caplog):
    with caplog.at_level(logging.INFO, logger="wikimem.audit"):
        assert cli(["character", "migrate", "--data", app.config["DATA_ROOT"]]) == 0
        events = [(e.audit, e.owner) for e in _events(caplog)]
    out = capsys.readouterr().out
    assert "register elaina-2 ('Elaina')" in out and "user:ann: set character 'Elaina' -> elaina-2 at " in out
    expected = {"user:ann": "elaina-2", "user:bob": "elaina-2", "user:cai": "character", "user:dee": "mira",
                "user:eve": "kai", "user:fay": None}
    assert {o: _setting(settings_world, o) for o in expected} == expected
    for owner in ("user:ann", "user:dee"):
        assert _git_log(app, owner)[0].split(" ", 1)[1] == f"settings: character={expected[owner]}"
    listed = settings_world.get(C, headers=auth(ADMIN)).get_json()["characters"]
    assert {c["id"]: c["name"] for c in listed} == {"character": "小艾", "elaina": "Elaina Vale", "elaina-2": "Elaina",
                                                   "kai": "kai", "mira": "Mira"}
    assert sorted(events) == sorted([("character-put", "char:elaina-2"), ("character-put", "char:kai"),
                                     ("character-put", "char:character"), ("settings", "user:ann"),
                                     ("settings", "user:bob"), ("settings", "user:cai"), ("settings", "user:dee")])
    heads = {o: _git_log(app, o)[0] for o in expected}
    assert cli(["character", "migrate", "--data", app.config["DATA_ROOT"]]) == 0
    assert "nothing to migrate" in capsys.readouterr().err
    assert {o: _git_log(app, o)[0] for o in expected} == heads


def test_migrate_through_the_host(app, settings_world):
    with app.app_context():
        from webapp.hosting import get_host

        characters = get_host().characters
        plan = characters.migrate(Caller.cli("test"), dry_run=True)
        assert [(s.name, s.character, s.registered, s.owners) for s in plan][0] == \
            ("Elaina", "elaina-2", True, ["user:ann", "user:bob"])
        done = characters.migrate(Caller.cli("test"))
        assert all(s.commits[o] for s in done for o in s.owners)
        assert characters.migrate(Caller.cli("test")) == []
        assert characters.resolve(_setting(settings_world, "user:ann")).name == "Elaina"
