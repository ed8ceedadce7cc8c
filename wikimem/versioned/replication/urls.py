"""``WIKIMEM_REMOTE``, the remote URL template (``{owner}`` standing for the owner's folder name, e.g.
``ssh://git@backup/wikimem/{owner}.git``, ``https://git.example/wikimem/{owner}.git``,
``file:///mnt/replica/{owner}.git`` or a plain absolute path): :func:`validate_template` checks it once,
:func:`remote_url` fills it in, :func:`redact` keeps a URL's password out of messages and logs."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

__all__ = ["TemplateError", "validate_template", "remote_url", "redact", "SCHEMES"]

SCHEMES = ("file", "ssh", "git+ssh", "http", "https", "git")
_FOLDER_RE = re.compile(r"[a-z0-9@_~-][a-z0-9@_~.-]{0,254}")
_FIELD_RE = re.compile(r"\{[^{}]*\}")


class TemplateError(ValueError):
    """``WIKIMEM_REMOTE`` is not a usable URL template."""


def redact(url: str) -> str:
    """``url`` without a password (``https://user:secret@host`` → ``https://user:***@host``)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urlunsplit((parts.scheme, f"{parts.username}:***@{host}", parts.path, parts.query, parts.fragment))


def validate_template(template: str) -> str:
    """Return ``template`` if it is a usable ``WIKIMEM_REMOTE``, else raise :class:`TemplateError`."""
    if not isinstance(template, str) or not template.strip():
        raise TemplateError("WIKIMEM_REMOTE is empty")
    template = template.strip()
    fields = _FIELD_RE.findall(template)
    if not fields or any(f != "{owner}" for f in fields) or template.count("{") != len(fields):
        raise TemplateError(f"WIKIMEM_REMOTE must contain {{owner}} (and no other {{…}}): {redact(template)!r}")
    sample = template.replace("{owner}", "owner")
    parts = urlsplit(sample)
    scheme = parts.scheme.lower()
    if not scheme:
        if not sample.startswith("/"):
            raise TemplateError(f"WIKIMEM_REMOTE must be a URL ({', '.join(SCHEMES)}) or an absolute path, "
                                f"not {redact(template)!r} (write scp-like host:path as ssh://host/path)")
        return template
    if scheme not in SCHEMES:
        raise TemplateError(f"WIKIMEM_REMOTE scheme {scheme!r} is not one of {', '.join(SCHEMES)}")
    if parts.query or parts.fragment:
        raise TemplateError("WIKIMEM_REMOTE may not have a query or a fragment")
    if "{owner}" in urlsplit(template).netloc:
        raise TemplateError("{owner} must be in the path of WIKIMEM_REMOTE, not in the host")
    if scheme == "file":
        if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
            raise TemplateError(f"a file:// WIKIMEM_REMOTE needs an absolute path (file:///…): {template!r}")
    elif not parts.hostname:
        raise TemplateError(f"WIKIMEM_REMOTE has no host: {redact(template)!r}")
    return template


def remote_url(template: str, folder: str) -> str:
    """The remote URL of the owner whose folder name is ``folder``."""
    if not isinstance(folder, str) or not _FOLDER_RE.fullmatch(folder) or folder in (".", ".."):
        raise ValueError(f"not an owner folder name: {folder!r}")
    return validate_template(template).replace("{owner}", folder)
