"""Who may do what: API tokens, operator accounts, credential files, shared sign-in state, quotas."""

from __future__ import annotations

from .authstate import STATE_FILE, AuthState
from .credfile import RACY_SECONDS, WatchedFile, edit_lines
from .operators import (
    DEFAULT_ROLE,
    LEGACY_ROLE,
    ROLES,
    Account,
    OperatorsFile,
    add_account,
    check_name,
    check_role,
    list_accounts,
    remove_account,
    role_at_least,
    update_account,
)
from .quotas import OwnerQuota
from .tokens import (
    SCOPES,
    Principal,
    TokenEntry,
    TokenFile,
    append_token,
    check_scopes,
    hash_secret,
    list_tokens,
    mint_token,
    revoke_tokens,
    token_id,
)

__all__ = [
    "WatchedFile",
    "edit_lines",
    "RACY_SECONDS",
    "SCOPES",
    "Principal",
    "TokenEntry",
    "hash_secret",
    "token_id",
    "mint_token",
    "TokenFile",
    "append_token",
    "check_scopes",
    "list_tokens",
    "revoke_tokens",
    "ROLES",
    "DEFAULT_ROLE",
    "LEGACY_ROLE",
    "Account",
    "OperatorsFile",
    "check_role",
    "role_at_least",
    "check_name",
    "add_account",
    "remove_account",
    "update_account",
    "list_accounts",
    "AuthState",
    "STATE_FILE",
    "OwnerQuota",
]
