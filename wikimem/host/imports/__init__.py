"""Imports (SPEC §11): SillyTavern's character cards become characters, its chats a person's memory with a
character, a person moves between hosts as one file, and what a character knows goes back as a lorebook.

- :class:`Imports` (``service.py``, held as ``host.imports``): the one service the edges call;
- ``cards.py`` (reading a card, V2 / V3, JSON / PNG) and ``png.py`` (a PNG's text chunks, bounded);
- ``lorebook.py`` (how a card lives in its profile, item by item, and back), ``cardimport.py`` (the preview
  and the one commit in ``char:<id>``);
- ``chats.py`` (a chat file read into turns), ``chatimport.py`` (the preview, the job, the transcript);
- ``portable.py`` (a person in and out), ``worldinfo.py`` (World Info and Data Bank exports).
"""

from __future__ import annotations

from .cardimport import IMPORT_ACTOR, CardPlan
from .cards import SUPPORTED_CARDS, Card, base64_size, decode_base64, read_card
from .chatimport import ChatPreview, chat_handler
from .chats import Chat, read_chat
from .portable import BUNDLE_SUFFIX, PersonImported, owner_of_file
from .service import CardImported, Imports

__all__ = ["Imports", "CardImported", "CardPlan", "Card", "read_card", "SUPPORTED_CARDS", "decode_base64",
           "base64_size", "Chat", "read_chat", "ChatPreview", "chat_handler", "PersonImported", "owner_of_file",
           "BUNDLE_SUFFIX", "IMPORT_ACTOR"]
