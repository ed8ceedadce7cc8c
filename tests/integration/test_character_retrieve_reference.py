"""A retrieve as a character equals a straightforward reference (issue 39, point 3): each source ranked by its own
index to a depth of 40, its first ``limit`` hits taken, all merged by score (the character's layer first, then the
shared one, then the profile, at equal scores) and cut to ``limit``. The person's memory mixes facts, small talk
(demoted after content) and diary entries said in channels (left out by the room), so the shortcuts of one source's
ranking — demotion looked at only as far as the hits, no sifting when the room leaves nothing out — are exercised
against the full ranking. Real app, real repositories.
"""

from __future__ import annotations

import pytest

WORDS = ["tea", "lighthouse", "violin", "harbor", "noodle", "museum", "kite", "orchard", "snow", "river"]
ORDER = {"character": 0, "shared": 1, "profile": 2}
QUERIES = ["tea at the harbor", "the violin and the snow", "kite over the river", "hi", "thanks, what about tea",
           "the orchard yesterday", "museum on 2026-03-04", "noodle", "lighthouse"]
ROOMS = [{}, {"channel": "g1", "present": ["user:ann", "user:bob", "char:kai"]},
         {"channel": "dm", "present": ["user:ann", "char:kai"]}]


def _text(i: int, salt: int) -> str:
    return "Ann said " + " ".join(WORDS[(i * k + salt) % len(WORDS)] for k in (1, 3, 7)) + f" ({salt}-{i})."


@pytest.fixture(scope="module")
def ann(tmp_path_factory):
    from webapp import create_app
    from webapp.hosting import get_host
    from wikimem.context import WriteContext

    tmp = tmp_path_factory.mktemp("reference")
    app = create_app({"TESTING": True, "DATA_ROOT": str(tmp / "data"), "ADMIN_TOKEN": "x" * 32})
    with app.app_context():
        host = get_host()
    host.characters.put("kai", name="Kai", persona="Kai listens.", shared_writes="direct")
    owner, _ = host.ensure_owner("user:ann")
    ctx = WriteContext(actor="test", run="setup")
    for salt, character in ((0, None), (1, "kai")):
        owner.apply_ops([{"op": "add", "file": f"topic{i % 4}", "name": f"n{salt}-{i}", "content": _text(i, salt)}
                         for i in range(60)] + [{"op": "add", "file": "chat", "name": f"hi{salt}-{i}",
                                                 "content": "Hi! Thanks, ok."} for i in range(15)],
                        character=character)
        for i in range(40):
            day = f"2026-0{1 + i % 4}-{1 + i % 9:02d}"
            room = ({"channel": "g1", "present": ["user:ann", "user:bob", "char:kai"]} if i % 3 == 0 else
                    {"channel": "dm", "present": ["user:ann", "char:kai"]} if i % 3 == 1 else {})
            owner.diary_append(_text(i, salt + 5), character=character, date=day, time=f"1{i % 10}:00", ctx=ctx,
                               **room)
            owner.diary_append("thanks!", character=character, date=day, time=f"0{i % 10}:30", ctx=ctx)
    host.owner("char:kai").apply_ops([{"op": "add", "file": "me", "name": f"p{i}", "content": _text(i, 9)}
                                      for i in range(12)])
    for character in ("kai", None):  # the diary indexes built (the first use builds them in the background)
        index = owner.index(character)
        assert index.diary_ready(None)
    return owner


def _hits(result) -> list[tuple]:
    return [(e.layer, e.kind, e.item.file, e.item.name, e.item.content, e.score) for e in result.items
            if e.source == "hit"]


def _reference(owner, query: str, limit: int, room: dict) -> list[tuple]:
    sources = owner._sources("kai", None, False, owner._room("kai", room.get("channel"), room.get("present")))
    ranked = []
    for source in sources:
        deep = source.index.retrieve(query, limit=40, tz=owner._tz(None), room=source.room)
        hits = [e for e in deep.items if e.source == "hit"][:limit]
        ranked += [((e.score is None, -(e.score or 0.0), ORDER[source.layer], n),
                    (source.layer, e.kind, e.item.file, e.item.name, e.item.content, e.score))
                   for n, e in enumerate(hits)]
    return [hit for _, hit in sorted(ranked, key=lambda r: r[0])[:limit]]


@pytest.mark.parametrize("room", ROOMS, ids=["no-room", "g1-with-bob", "dm"])
def test_a_character_retrieve_equals_the_reference(ann, room):
    layers = set()
    for query in QUERIES:
        for limit in (1, 3, 10):
            got = _hits(ann.retrieve(query, character="kai", limit=limit, **room))
            assert got == _reference(ann, query, limit, room), (query, limit)
            layers |= {hit[0] for hit in got}
    assert layers == {"character", "shared", "profile"}  # every source gave hits somewhere


def test_small_talk_and_rooms_are_in_play(ann):
    free = _hits(ann.retrieve("thanks", character="kai", limit=10))
    assert any(hit[4] in ("thanks!", "Hi! Thanks, ok.") for hit in free)  # small talk answers a small-talk query
    content = _hits(ann.retrieve("thanks, what about tea", character="kai", limit=10))
    assert content and "tea" in content[0][4]  # and is demoted under a question with content
    seen = ann.retrieve("tea", character="kai", limit=10, explain=True, channel="g1",
                        present=["user:ann", "user:bob", "char:kai"])
    assert seen.excluded  # the room left entries out
