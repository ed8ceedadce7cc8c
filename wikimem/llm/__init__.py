"""What talks to a language model: the chat client, memorize and the diary tool, the transcript query."""

from __future__ import annotations

from . import chat, memorizer, transcript
from .chat import *  # noqa: F403
from .memorizer import *  # noqa: F403
from .transcript import *  # noqa: F403

__all__ = [*chat.__all__, *memorizer.__all__, *transcript.__all__]
