"""Two persons, two characters, a direct chat and two groups (issue 34), shared by the admin tests of channels.

``seed_rooms(host)`` registers Kai and Mira and writes into ``user:ann``'s folder: a direct-chat secret told to
Kai, a G1 evening with Bob and Kai, a G2 afternoon with Mira, an entry that says nothing of a room, and Kai's own
note of the G1 evening in Kai's layer. Every text holds a piece of hostile markup, so a page that does not escape
it shows.
"""

from __future__ import annotations

from wikimem.context import WriteContext

ANN, BOB = "user:ann", "user:bob"
ROOM_CHARACTERS = {"kai": "Kai", "mira": "Mira"}
XSS = '<img src=x onerror=alert("room")>'
# day → (time, channel, present, content) of the shared layer
SHARED_ENTRIES = {
    "2026-03-01": ("09:00", "dm", [ANN, "char:kai"], f"Ann told Kai the code word BLUEFIN. {XSS}"),
    "2026-03-02": ("18:00", "g1", [ANN, BOB, "char:kai"], f"Quiz night in G1 with Bob. {XSS}"),
    "2026-03-03": ("15:00", "g2", [ANN, "char:mira"], f"Ann showed Mira her sketches in G2. {XSS}"),
    "2026-03-04": ("08:00", None, [], f"Ann went running (no room said). {XSS}"),
}
KAI_NOTE = ("2026-03-02", "18:05", "g1", [ANN, BOB, "char:kai"], f"I lost the quiz to Bob. {XSS}")


def seed_rooms(host):
    """Register Kai and Mira and fill Ann's folder (see the module docstring); Ann's owner."""
    for character, name in ROOM_CHARACTERS.items():
        host.characters.put(character, name=name, persona=f"{name}, a character.")
    host.ensure_owner(BOB)
    ann, _ = host.ensure_owner(ANN)
    for day, (time, channel, present, content) in SHARED_ENTRIES.items():
        room = {"channel": channel, "present": present} if channel else {}
        ann.diary_append(content, date=day, time=time, ctx=WriteContext(actor="bot"), **room)
    day, time, channel, present, content = KAI_NOTE
    ann.diary_append(content, date=day, time=time, channel=channel, present=present, character="kai",
                     ctx=WriteContext(actor="kai-bot"))
    return ann
