"""Audit events: what an operator did, by whom, to which owner, with what result — one log record each.

Every event goes to the logger ``wikimem.audit`` (:data:`AUDIT_LOGGER`) at
INFO. Its message reads on its own in a plain-text log
(``audit revert actor=alice owner=user:ann result=ok commit=…``) and its
fields are attributes of the record, so a JSON log line carries them as keys
(``audit``, ``actor``, ``owner``, ``result`` and the event's own, e.g.
``token``). The web app adds the request id (``webapp/logs.py``); the CLI
sends its events to stderr (``wikimem token …``, ``wikimem operator …``).

Actions (:data:`ACTIONS`): signing in and out, every memory write
(``edit``, ``delete-item``, ``diary-append``, ``batch``, ``memorize``,
``diary-tool``, ``settings``, ``create-owner``…) and undo, probation,
deletion, erasure (the owner named by the erasure's keyed digest),
forgetting (never the item's name), tokens and operator accounts. Events of
changes come from one place, the host's gate (:mod:`wikimem.host.gate`).
Results: ``ok``, ``refused`` (no right, a conflict, a refused value) or
``failed`` (the host's fault). Never a secret, a password or memory content.
A field named like an attribute logging owns (``name``) is logged as
``target_<field>``.
"""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["AUDIT_LOGGER", "ACTIONS", "audit", "result_of"]

AUDIT_LOGGER = "wikimem.audit"
ACTIONS = ("sign-in", "sign-out", "revert", "rollback", "restore", "bulk-rollback", "edit", "delete-item",
           "delete-owner", "token-mint", "token-revoke", "token-rotate", "operator-add", "operator-remove",
           "operator-role", "operator-passwd", "erase-owner", "forget",
           # memory writes, from every edge (the gate: wikimem/host/gate.py)
           "create-owner", "diary-append", "batch", "memorize", "diary-tool", "settings", "approve", "discard",
           "hold", "bulk-approve", "bulk-discard", "repair", "sync", "restore-discarded",
           # the character registry (wikimem/host/characters.py)
           "character-put", "character-delete",
           # imports (wikimem/host/imports/): cards, chats, transcripts, persons in and out, an import undone
           "import-card", "import-chat", "import-transcript", "import-person", "import-rollback", "export-person")
# Record attributes logging itself owns: an event field of one of these names would clash.
_RESERVED = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime"}

log = logging.getLogger(AUDIT_LOGGER)


def result_of(status: int) -> str:
    """The result of an HTTP status: ``ok`` (< 400), ``refused`` (4xx) or ``failed`` (5xx)."""
    return "ok" if status < 400 else "refused" if status < 500 else "failed"


def audit(action: str, *, actor: str | None, owner: str | None = None, result: str = "ok",
          **fields: Any) -> None:
    """Log one audit event (fields with a None value are left out)."""
    if action not in ACTIONS:
        raise ValueError(f"unknown audit action {action!r}")
    values = {"audit": action, "actor": actor or "-", "owner": owner, "result": result, **fields}
    # A field named like an attribute logging owns (an item's ``name``) is kept under ``target_<name>``.
    values = {(f"target_{k}" if k in _RESERVED else k): v for k, v in values.items() if v is not None}
    shown = " ".join(f"{k}={v}" for k, v in values.items() if k != "audit")
    log.info("audit %s %s", action, shown, extra=values)
