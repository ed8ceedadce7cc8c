"""Who may do what: API tokens, operator accounts, credential files, shared sign-in state, quotas."""

from __future__ import annotations

from . import authstate, credfile, operators, quotas, tokens
from .authstate import *  # noqa: F403
from .credfile import *  # noqa: F403
from .operators import *  # noqa: F403
from .quotas import *  # noqa: F403
from .tokens import *  # noqa: F403

__all__ = [*authstate.__all__, *credfile.__all__, *operators.__all__, *quotas.__all__, *tokens.__all__]
