"""``--character ID`` on the command line (SPEC §11): ls, show, grep, graph, explain, log and diff read one character's
layer of a host owner (``--owner``) or of a plain folder (``--store DIR``: its ``characters/ID/``); runs take it as a
selection; the other commands refuse it."""

from __future__ import annotations

import pytest
from apiworld import ADMIN, auth

from wikimem.cli import main
from wikimem.host import encode_owner_id
from wikimem.store import MemoryStore

OWNER = "user:ann"


@pytest.fixture
def data(tmp_path):
    """A data root with kai and mira registered and one person who told each of them something else."""
    from webapp import create_app

    root = tmp_path / "data"
    app = create_app({"TESTING": True, "DATA_ROOT": str(root), "ADMIN_TOKEN": ADMIN})
    api = app.test_client()
    for character, name in (("kai", "Kai"), ("mira", "Mira")):
        assert api.put(f"/api/v1/characters/{character}", json={"name": name}, headers=auth(ADMIN)).status_code == 201
    assert api.put(f"/api/v1/owners/{OWNER}", headers=auth(ADMIN)).status_code == 201
    items = f"/api/v1/owners/{OWNER}/items/preferences/drink"
    for body in ({"content": "Ann drinks green tea.", "run": "run_shared"},
                 {"content": "Ann orders an oat latte from Kai.", "run": "run_kai", "character": "kai"},
                 {"content": "Ann borrows poetry from Mira.", "run": "run_mira", "character": "mira"}):
        assert api.put(items, json=body, headers=auth(ADMIN)).status_code == 201
    assert api.post(f"/api/v1/owners/{OWNER}/diary", json={"content": "Kai made Ann a latte.", "date": "2026-07-21",
                                                          "time": "09:00", "character": "kai", "run": "run_kai"},
                    headers=auth(ADMIN)).status_code == 201
    return root


def host(data, *args: str) -> int:
    return main(["--owner", OWNER, "--data", str(data), *args])


def test_ls_show_and_grep_read_the_characters_layer_of_a_host_owner(data, capsys):
    assert host(data, "--character", "kai", "ls") == 0
    out = capsys.readouterr().out
    assert out.split()[:2] == ["preferences", "1"] and "(diary)" in out and "2026-07-21" in out
    assert host(data, "ls") == 0
    assert "(diary)" not in capsys.readouterr().out  # the shared layer has no diary
    assert host(data, "show", "preferences", "drink", "--character", "kai") == 0  # after the command too
    assert "Ann orders an oat latte from Kai." in capsys.readouterr().out
    assert host(data, "show", "preferences/drink", "--character", "mira") == 0
    assert "Ann borrows poetry from Mira." in capsys.readouterr().out
    assert host(data, "show", "preferences/drink") == 0
    assert "Ann drinks green tea." in capsys.readouterr().out
    assert host(data, "--character", "kai", "grep", "latte") == 0
    assert capsys.readouterr().out.splitlines() == ["preferences:drink:Ann orders an oat latte from Kai.",
                                                    "2026-07-21:09:00:Kai made Ann a latte."]
    assert host(data, "--character", "kai", "grep", "poetry|green tea") == 1  # mira's and the shared layer's


def test_log_and_diff_narrow_to_the_characters_layer(data, capsys):
    assert host(data, "log") == 0
    every = capsys.readouterr().out
    assert "run=run_mira" in every and "run=run_kai" in every and "layers=kai" in every
    assert host(data, "log", "--character", "kai") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines and all("run=run_mira" not in line and "run=run_shared" not in line for line in lines)
    assert sum("run=run_kai" in line and "layers=kai" in line for line in lines) == 2
    assert host(data, "--character", "kai", "diff", "HEAD~4", "HEAD") == 0
    out = capsys.readouterr().out
    assert "+ [kai] preferences/drink" in out and "+ [kai] diary 2026-07-21 09:00" in out and "Mira" not in out
    # the plain folder's path to the same history: --store on the owner's folder
    folder = data / "owners" / encode_owner_id(OWNER)
    assert main(["--store", str(folder), "log", "--character", "mira"]) == 0
    assert "run=run_mira" in capsys.readouterr().out


def test_explain_recalls_as_the_character_of_a_host_owner(data, capsys):
    assert host(data, "explain", "what does Ann drink", "--character", "kai") == 0
    out = capsys.readouterr().out
    assert "(kai) preferences:drink" in out and "(shared) preferences:drink" in out and "Mira" not in out
    assert "(mira)" not in out
    assert host(data, "explain", "what does Ann drink") == 0
    assert "(kai)" not in capsys.readouterr().out
    assert host(data, "explain", "drink", "--character", "kai", "--jieba") == 2
    assert "--jieba" in capsys.readouterr().err


def test_a_plain_folder_reads_its_layer_folder(tmp_path, capsys):
    folder = tmp_path / "memory"
    store = MemoryStore(folder)
    store.add("preferences", "drink", "Ann drinks green tea.")
    MemoryStore(folder / "characters" / "kai").add("preferences", "drink", "Ann orders an oat latte, see "
                                                                          "[[places:cafe]].")
    MemoryStore(folder / "characters" / "kai").add("places", "cafe", "The café where Kai works.")

    def plain(*args: str) -> int:
        return main(["--store", str(folder), *args])

    assert plain("ls", "--character", "kai") == 0
    assert capsys.readouterr().out.split() == ["places", "1", "preferences", "1"]
    assert plain("--character", "kai", "show", "preferences:drink") == 0
    assert "oat latte" in capsys.readouterr().out
    assert plain("--character", "kai", "grep", "tea") == 1 and plain("grep", "tea") == 0
    capsys.readouterr()
    assert plain("--character", "kai", "graph", "--format", "json") == 0
    assert "cafe" in capsys.readouterr().out
    assert plain("--character", "kai", "explain", "latte") == 0
    out = capsys.readouterr().out
    assert "preferences:drink" in out and "places:cafe" in out
    assert plain("--character", "mira", "ls") == 2
    assert "no layer of the character 'mira'" in capsys.readouterr().err


def test_a_bad_id_is_refused(data, capsys):
    assert host(data, "--character", "Kai", "ls") == 2
    assert "invalid character id 'Kai'" in capsys.readouterr().err


@pytest.mark.parametrize("args", [["--character", "kai", "forget", OWNER, "preferences/drink"],
                                  ["token", "list", "--character", "kai"],
                                  ["revert", "HEAD", "--character", "kai"]])
def test_a_command_without_layers_refuses_character_as_a_usage_error(data, capsys, args):
    with pytest.raises(SystemExit) as info:
        host(data, *args)
    assert info.value.code == 2
    assert f"`wikimem {args[2] if args[0] == '--character' else args[0]}` takes no --character (these do: ls, show, " \
        in capsys.readouterr().err
    assert host(data, "show", "preferences/drink", "--character", "mira") == 0  # nothing was forgotten or reverted


def test_runs_and_bulk_rollback_select_the_runs_that_wrote_the_characters_layer(data, capsys):
    assert main(["runs", "--data", str(data), "--character", "kai"]) == 0
    out = capsys.readouterr().out
    assert "run_kai" in out and "[kai]" in out and "run_mira" not in out and "run_shared" not in out
    assert main(["--character", "kai", "bulk-rollback", "--data", str(data), "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines() == [f"{OWNER}: 2 change(s), 0 conflict(s)"]
