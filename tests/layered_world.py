"""A person with three characters (library level), shared by the admin tests of issue 33 (pages and browser).

``seed_layers(host)`` registers Kai, Mira and Elaina and writes into ``user:ann``'s folder: a shared item, and in
each character's layer a wiki item and a diary entry holding a secret told to that character alone — every text
with a piece of hostile markup, so a page that does not escape it shows. ``MEMORIZE_REPLY`` is what the stand-in
chat model answers to a memorize: one diary entry and one fact (a proposal to the shared layer, Kai's policy being
``staged``).
"""

from __future__ import annotations

import json

from wikimem.context import WriteContext

PERSON = "user:ann"
CHARACTERS = {"kai": ("Kai", "A cheerful barista <b>who remembers</b> every order."),
              "mira": ("Mira", "A painter by the harbour."),
              "elaina": ("Elaina", "A travelling witch.")}
SECRETS = {"kai": "BLUEFIN", "mira": "MAGENTA", "elaina": "SAFFRON"}
HOSTILE = {"shared": '<script>alert("shared")</script>', "kai": '<img src=x onerror=alert("kai")>',
           "mira": '<svg onload=alert("mira")>', "elaina": '<iframe src="javascript:alert(1)">'}
SHARED_FACT = "Ann lives by the sea."
MEMORIZED_FACT = "Ann is learning to surf."
MEMORIZED_DIARY = "Ann told me she started surfing lessons."
MEMORIZE_REPLY = json.dumps({"diary": [{"content": MEMORIZED_DIARY}],
                             "facts": [{"file": "hobbies", "name": "surfing", "content": MEMORIZED_FACT}]})


def seed_layers(host, person: str = PERSON):
    """Register the three characters and fill ``person``'s layers (see the module docstring); the owner."""
    for character, (name, persona) in CHARACTERS.items():
        host.characters.put(character, name=name, persona=persona)
    host.owner("char:kai").add("self", "who", "Kai works at the harbour café.", ctx=WriteContext(actor="seed"))
    owner, _ = host.ensure_owner(person)
    owner.add("people", "ann", f"{SHARED_FACT} {HOSTILE['shared']}", ctx=WriteContext(actor="seed"))
    for character, secret in SECRETS.items():
        ctx = WriteContext(actor=f"{character}-bot")
        owner.add("secrets", "code-word", f"Ann told me the code word {secret}. {HOSTILE[character]}", ctx=ctx,
                  character=character)
        owner.diary_append(f"A walk with Ann; she whispered {secret}. {HOSTILE[character]}", date="2026-07-20",
                           time="10:00", ctx=ctx, character=character)
    return owner


def memorize_as(owner, character: str = "kai"):
    """A turn memorized as ``character`` (the host's chat model answers :data:`MEMORIZE_REPLY`); its result."""
    return owner.memorize("user: I started surfing lessons!", character=character,
                          ctx=WriteContext(actor=f"{character}-bot"))
