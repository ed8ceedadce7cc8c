"""What talks to a language model: the chat client, memorize and the diary tool, memorize as a character
(diary entries and facts, :func:`extract` / :func:`parse_reply`), the transcript query."""

from __future__ import annotations

from . import chat, extraction, memorizer, reply, transcript
from .chat import *  # noqa: F403
from .extraction import *  # noqa: F403
from .memorizer import *  # noqa: F403
from .reply import *  # noqa: F403
from .transcript import *  # noqa: F403

__all__ = [*chat.__all__, *extraction.__all__, *memorizer.__all__, *reply.__all__, *transcript.__all__]
