"""Every size limit of the library and the host, in one place, with the error they raise.

Each bounds the cost of one request (tokenising, indexing, rendering a file,
holding an owner's lock, asking a model) so that one client cannot stall the
host for the others. The limits reference (docs/reference/limits.md) and the OpenAPI document list them; an
oversized value is refused with :class:`~wikimem.errors.TooLarge` (HTTP 413)
before anything is written.
"""

from __future__ import annotations

from .errors import TooLarge

__all__ = ["MAX_CONTENT_CHARS", "MAX_QUERY_CHARS", "MAX_TURN_CHARS", "MAX_OPS", "MAX_BATCH_CHARS",
           "MAX_RETRIEVE_LIMIT", "MAX_FILE_BYTES", "MAX_SETTINGS_BYTES", "MAX_CHARACTERS", "MAX_LAYERS",
           "MAX_PERSONA_CHARS", "MAX_CARD_BYTES", "MAX_CARD_JSON_BYTES", "MAX_PNG_CHUNKS", "MAX_LOREBOOK_ENTRIES",
           "MAX_CHAT_BYTES", "MAX_CHAT_LINE_BYTES", "MAX_CHAT_MESSAGES", "MAX_PERSON_BYTES", "check_length"]

# One wiki item's or diary entry's content: a few paragraphs of memory, not a document.
MAX_CONTENT_CHARS = 32_000
# A retrieve query (or the transcript it is built from): what a prompt would ask about.
MAX_QUERY_CHARS = 4_000
# One memorize turn: what is sent to the model in one call.
MAX_TURN_CHARS = 32_000
# One batch of ops is one commit under the owner's lock: this many ops, this much content in all.
MAX_OPS = 200
MAX_BATCH_CHARS = 256_000
# Hits one retrieve may return (its ``limit``): more than any prompt holds; with ``explain`` each hit carries
# its scores and terms, so an unbounded limit was an unbounded answer. Beyond: 422, a value refused.
MAX_RETRIEVE_LIMIT = 200
# One memory file (a wiki file or a diary day) on disk or from the remote: every write re-reads and
# re-renders the file it changes under the owner's lock. A write that would pass it is refused (413);
# a bigger file found in a folder (a hand edit) or on the remote is refused as damage, for its owner only.
MAX_FILE_BYTES = 8 * 1024 * 1024
# ``settings.json`` (and ``.gitignore``): a handful of short values.
MAX_SETTINGS_BYTES = 64 * 1024
# Runs on probation one owner may hold at once (staged branches): a retrieve with ``include_staged`` applies
# every one of them, and a review lists them all. A write that would open one more is refused (403
# ``quota_exceeded``) until some are approved, discarded or expired.
MAX_STAGED_RUNS = 100
# Characters one host registers (not counting deleted ones): each is an owner (char:<id>) that listing the
# registry opens, and a folder in the persons it talks with. Beyond: 422, delete one first.
MAX_CHARACTERS = 1_000
# Characters' layers one person's folder holds at most (characters/<id>/): every write checks its hand edits in each.
MAX_LAYERS = 64
# A character's persona (its definition, in its owner's settings.json, sent with every memorize prompt).
MAX_PERSONA_CHARS = 8_000

# Imports (wikimem/host/imports/): every size is checked before the bytes are parsed.
# A character card file, JSON or PNG (the picture included), as uploaded.
MAX_CARD_BYTES = 16 * 1024 * 1024
# The card's JSON text: the file itself, or what a PNG's ``chara`` / ``ccv3`` chunk holds once decoded (its
# base64 text, and what an iTXt / zTXt chunk inflates to, are bounded from it before they are read).
MAX_CARD_JSON_BYTES = 2 * 1024 * 1024
# Chunks one PNG may have (a picture has a handful; thousands of empty ones are a way to waste time).
MAX_PNG_CHUNKS = 4_096
# Lorebook (``character_book``) entries of one card: each becomes an item of the character's profile.
MAX_LOREBOOK_ENTRIES = 2_000
# A SillyTavern chat file (JSONL): its size, one line, its messages.
MAX_CHAT_BYTES = 64 * 1024 * 1024
MAX_CHAT_LINE_BYTES = 1024 * 1024
MAX_CHAT_MESSAGES = 50_000
# A person's portable file (a git bundle of the whole folder: every layer, all its history).
MAX_PERSON_BYTES = 1024 * 1024 * 1024


def check_length(text: str, limit: int, what: str) -> str:
    """``text`` if it is at most ``limit`` characters long, else :class:`TooLarge`."""
    if len(text) > limit:
        raise TooLarge(f"{what} is {len(text):,} characters long; at most {limit:,} are accepted")
    return text
