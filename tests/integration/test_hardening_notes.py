"""docs/guides/hardening-notes.md says only what is true: its commands parse as written, every variable it names
exists, and the defaults it states are the configuration's."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from docblocks import doc_block

from wikimem.cli import build_parser
from wikimem.host import load_config
from wikimem.host.variables import VARIABLES

DOC = Path(__file__).resolve().parents[2] / "docs" / "guides" / "hardening-notes.md"


def _blocks() -> list[str]:
    return [doc_block(name) for name in ("hardening-notes-1", "hardening-notes-2", "hardening-notes-3")]


def test_every_command_of_the_notes_parses_and_every_setting_is_a_variable(monkeypatch):
    names = {v.name for v in VARIABLES}
    lines = [line for block in _blocks() for line in block.splitlines() if line.strip()]
    assert lines
    for line in lines:
        if line.startswith("wikimem "):
            args = build_parser().parse_args(shlex.split(line)[1:])
            assert getattr(args, "handler", None) is not None, line
        else:
            name, _, value = line.partition("=")
            assert name in names and value, line
            monkeypatch.setenv(name, value)
            load_config({})  # a value the configuration takes from the environment


def test_the_variables_and_defaults_the_notes_name_are_the_configurations():
    text = DOC.read_text(encoding="utf-8")
    names = {v.name for v in VARIABLES}
    named = set(re.findall(r"WIKIMEM_[A-Z_]+", text))
    assert named and named <= names, sorted(named - names)
    config = load_config({})
    assert "(default 4)" in text and config.database_pool == 4
    assert "(default 14)" in text and config.discarded_days == 14
