"""Log lines of the host: JSON (one object a line, python-json-logger) or plain text, each with its request id.

Design notes: docs/explanation/operations.md (``webapp/logs.py``).
"""

from __future__ import annotations

import logging
import logging.config
import time
from typing import Any

from pythonjsonlogger.json import JsonFormatter

__all__ = ["RequestIdFilter", "AppJsonFormatter", "AccessJsonFormatter", "logging_config", "configure",
           "FORMATS", "ACCESS_FORMATS", "TEXT_ACCESS_FORMAT", "JSON_ACCESS_FORMAT"]

FORMATS = ("json", "text")
# gunicorn's access_log_format per log format (%({x-request-id}o)s: the id the app echoed in the response).
TEXT_ACCESS_FORMAT = '%(h)s %(p)s "%(r)s" %(s)s %(b)s %(M)sms "%(a)s" rid=%({x-request-id}o)s'
JSON_ACCESS_FORMAT = "%(m)s %(U)s %(s)s"  # the "message" of a JSON access line; the fields carry the rest
ACCESS_FORMATS = {"json": JSON_ACCESS_FORMAT, "text": TEXT_ACCESS_FORMAT}
_TEXT_FORMAT = "%(asctime)s [%(process)d] [%(levelname)s] %(name)s: %(message)s [rid=%(request_id)s]"


class RequestIdFilter(logging.Filter):
    """Puts the id of the request being served on every record (``request_id``; ``-`` outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "request_id", None) is None:
            try:
                from webapp.requestid import current_request_id

                rid = current_request_id()
            except Exception:  # logging must never fail because of this
                rid = None
            record.request_id = rid or "-"
        return True


class AppJsonFormatter(JsonFormatter):
    """One JSON object a line: time (UTC, ms), level, logger, message, request id, process, and the extras."""

    def __init__(self, *args: Any, **kwargs: Any):
        kwargs.setdefault("rename_fields", {"levelname": "level", "name": "logger", "asctime": "time"})
        kwargs.setdefault("json_ensure_ascii", False)
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s %(request_id)s %(process)d",
                         *args, **kwargs)

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802 (logging's)
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z"


# gunicorn's atoms → the fields of a JSON access line.
_ATOMS = {"h": "remote_addr", "r": "request", "m": "method", "U": "path", "q": "query", "H": "protocol", "s": "status",
          "B": "bytes", "a": "user_agent", "f": "referer", "{x-request-id}o": "request_id"}


class AccessJsonFormatter(AppJsonFormatter):
    """gunicorn's access line as JSON: its atoms (``record.args``) as named fields, the duration in ms."""

    def add_fields(self, log_data: dict[str, Any], record: logging.LogRecord, message_dict: dict[str, Any]) -> None:
        super().add_fields(log_data, record, message_dict)
        atoms = record.args if isinstance(record.args, dict) else {}
        for atom, name in _ATOMS.items():
            value = dict.get(atoms, atom)
            if value not in (None, "-", ""):
                log_data[name] = value
        if "status" in log_data:
            try:
                log_data["status"] = int(log_data["status"])
            except (TypeError, ValueError):
                pass
        micros = dict.get(atoms, "D")
        if isinstance(micros, int):
            log_data["duration_ms"] = round(micros / 1000, 3)
        log_data.setdefault("request_id", "-")


def logging_config(fmt: str = "json", level: str = "INFO") -> dict[str, Any]:
    """A ``dictConfig`` dictionary: app and gunicorn logs in ``fmt`` (``json`` or ``text``) at ``level``."""
    if fmt not in FORMATS:
        raise ValueError(f"log format must be json or text, got {fmt!r}")
    level = str(level).upper()
    formatters: dict[str, dict[str, Any]]
    if fmt == "json":
        formatters = {"app": {"()": AppJsonFormatter}, "access": {"()": AccessJsonFormatter}}
    else:
        formatters = {"app": {"format": _TEXT_FORMAT}, "access": {"format": "%(message)s"}}
    handlers = {
        "app": {"class": "logging.StreamHandler", "stream": "ext://sys.stderr", "formatter": "app",
                "filters": ["request_id"]},
        "access": {"class": "logging.StreamHandler", "stream": "ext://sys.stdout", "formatter": "access",
                   "filters": ["request_id"]},
    }
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"request_id": {"()": RequestIdFilter}},
        "formatters": formatters,
        "handlers": handlers,
        "root": {"level": level, "handlers": ["app"]},
        "loggers": {
            "gunicorn.error": {"level": level, "handlers": ["app"], "propagate": False},
            "gunicorn.access": {"level": "INFO", "handlers": ["access"], "propagate": False},
        },
    }


def configure(fmt: str = "text", level: str = "INFO") -> None:
    """Apply :func:`logging_config` to this process (the development server; gunicorn does it itself)."""
    logging.config.dictConfig(logging_config(fmt, level))
