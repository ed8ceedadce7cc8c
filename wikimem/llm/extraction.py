"""Memorize as a character: one chat call that returns diary entries and facts (SPEC §11).

- :data:`CHARACTER_PROMPT` (a direct chat) and :data:`CHANNEL_PROMPT` (a group
  turn, where each element names its ``"person"``): the project's own system
  prompts, English instructions, entries in the conversation's language;
- :func:`render_character_prompt`: the placeholders ``{character}``,
  ``{persona}``, ``{person}``, ``{today}`` replaced, other braces left as written;
- :func:`extract`: the call and its reply (:class:`~wikimem.llm.reply.Reply`).

Like the seed's ``memorize``, the reply is read fail-open and an error of the
model itself (``llm.chat`` raising, e.g. :class:`~wikimem.llm.chat.LLMError`)
propagates: "the model was down" must not look like "nothing worth keeping".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date

from wikimem.naming import validate_date

from .memorizer import DIARY_RULES, LLM
from .reply import Reply, parse_reply

__all__ = ["CHARACTER_PROMPT", "CHANNEL_PROMPT", "FACT_RULES", "render_character_prompt", "extract"]

FACT_RULES = (
    "A fact is something lasting about the person that stays true after today: who they are, "
    "what they like or dislike, the people, animals and things in their life, their work, "
    "health, habits and plans.",
    "Give each fact a \"file\", a topic in lowercase letters, digits, '_' and '-' (preferences, "
    "people, work, health, daily_life), a \"name\", a short name of the item (a few words, "
    "without ':', '|', '#' or brackets), and its \"content\" in one to three sentences.",
    "When a fact changes what was true before (a new job, a new city), write it as it is now "
    "under the same file and name.",
    "Only what the person said or showed about themselves; nothing about you, and nothing the "
    "conversation does not show.",
    "Write the content in the language the conversation is held in; you may link another fact "
    "as [[file:name]].",
)

_ANSWER = (
    "Most turns hold nothing worth keeping. Then answer {\"diary\": [], \"facts\": []}; that is a "
    "normal, good answer.\n"
    "\n"
    "Answer with one JSON object and nothing else:\n"
)


def _rules(rules: Sequence[str]) -> str:
    return "".join(f"- {rule}\n" for rule in rules)


CHARACTER_PROMPT = (
    "You are {character}.\n"
    "\n"
    "{persona}\n"
    "\n"
    "You keep a memory of the person you talk with ({person}) so that later you remember what "
    "happened between you, and when, and what is true about them. Today is {today}.\n"
    "\n"
    "Read the conversation turn you are given and write down what in it is worth keeping, in "
    "two lists.\n"
    "\n"
    "\"diary\": what you lived or witnessed with this person, in your own diary.\n"
    + _rules(DIARY_RULES)
    + "- Add \"date\": \"YYYY-MM-DD\" only when the event happened on a known day other than today.\n"
    "\n"
    "\"facts\": what you learned about the person.\n"
    + _rules(FACT_RULES)
    + "\n"
    + _ANSWER
    + '{"diary": [{"content": "..."}], "facts": [{"file": "...", "name": "...", "content": "..."}]}\n'
)

CHANNEL_PROMPT = (
    "You are {character}.\n"
    "\n"
    "{persona}\n"
    "\n"
    "You are in a group chat with several persons ({person}). You keep a memory of each of them "
    "so that later you remember what happened between you, and when, and what is true about "
    "them. Today is {today}.\n"
    "\n"
    "Read the conversation turn you are given and write down what in it is worth keeping, in "
    "two lists. Every entry and every fact names the one person it is about as \"person\", "
    "exactly as written in the list above; an event several of them shared is written once for "
    "each of them.\n"
    "\n"
    "\"diary\": what you lived or witnessed with each person, in your own diary.\n"
    + _rules(DIARY_RULES)
    + "- Add \"date\": \"YYYY-MM-DD\" only when the event happened on a known day other than today.\n"
    "\n"
    "\"facts\": what you learned about each person.\n"
    + _rules(FACT_RULES)
    + "\n"
    + _ANSWER
    + '{"diary": [{"person": "...", "content": "..."}], '
    '"facts": [{"person": "...", "file": "...", "name": "...", "content": "..."}]}\n'
)

_BLANK_RUN = re.compile(r"\n{3,}")


def render_character_prompt(prompt: str, *, character: str, persona: str = "", person: str = "",
                            today: str | date | None = None) -> str:
    """The system prompt with its four placeholders replaced literally (other braces stay);
    an empty persona leaves no empty paragraph behind. ``today`` defaults to the local date."""
    values = {"character": character, "persona": persona, "person": person}
    for key, value in values.items():
        if not isinstance(value, str):
            raise ValueError(f"{key} must be a string")
    values["persona"] = persona.strip()
    values["today"] = _today(today)
    out = re.sub(r"\{(character|persona|person|today)\}", lambda m: values[m.group(1)], prompt)
    return _BLANK_RUN.sub("\n\n", out) if not values["persona"] else out


def _today(today: str | date | None) -> str:
    if today is None:
        return date.today().isoformat()
    if isinstance(today, date):
        return today.isoformat()
    return validate_date(today)


def extract(llm: LLM, turn: str, *, character: str, persona: str = "", person: str = "",
            today: str | date | None = None, prompt: str | None = None,
            persons: Sequence[str] | None = None) -> Reply:
    """Ask ``llm`` once what in ``turn`` is worth keeping: diary entries and facts.

    ``persons`` makes it a channel turn: the default prompt is
    :data:`CHANNEL_PROMPT`, ``{person}`` lists them, and each element must
    name one of them (see :func:`~wikimem.llm.reply.parse_reply`). Bad
    arguments raise ``ValueError`` before the model is called; the model's
    own errors propagate; its reply is read fail-open.
    """
    if not isinstance(turn, str):
        raise ValueError("turn must be a string")
    if prompt is not None and not isinstance(prompt, str):
        raise ValueError("prompt must be a string")
    if persons is not None and (isinstance(persons, str) or not all(isinstance(p, str) for p in persons)):
        raise ValueError("persons must be a list of person ids")
    if persons:
        person = ", ".join(persons)
    default = CHANNEL_PROMPT if persons else CHARACTER_PROMPT
    system = render_character_prompt(default if prompt is None else prompt, character=character,
                                     persona=persona or "", person=person, today=today)
    text = llm.chat([{"role": "system", "content": system}, {"role": "user", "content": turn}])
    return parse_reply(text, persons=list(persons) if persons else None)
