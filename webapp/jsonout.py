"""The app's JSON answers: the same documents as Flask's own provider, written by ``orjson`` when it is there.

A retrieve's answer is the largest thing most requests serialise; ``orjson``
writes it several times faster than :mod:`json`. Every value ``orjson`` does not
write the way Flask does (dates, dataclasses, ``__html__``, numbers it refuses)
goes through Flask's own ``default`` or, failing that, the whole document
through :mod:`json` as before. Pretty output (debug) stays Flask's.
"""

from __future__ import annotations

from typing import Any, cast

from flask import Response
from flask.json.provider import DefaultJSONProvider
from werkzeug.sansio.response import Response as BaseResponse

__all__ = ["JsonProvider"]

try:
    import orjson
except ImportError:  # (the host extra brings it; without it, Flask's provider as it is)
    orjson = None  # type: ignore[assignment]

_OPTIONS = (orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_NON_STR_KEYS
            if orjson is not None else 0)


class JsonProvider(DefaultJSONProvider):
    """Compact answers in insertion order, non-ASCII kept (the app's settings), through ``orjson``."""

    sort_keys = False
    ensure_ascii = False

    def response(self, *args: Any, **kwargs: Any) -> BaseResponse:
        pretty = (self.compact is None and self._app.debug) or self.compact is False
        if orjson is None or pretty or self.sort_keys or self.ensure_ascii:
            return super().response(*args, **kwargs)
        obj = self._prepare_response_obj(args, kwargs)
        try:
            body = orjson.dumps(obj, default=self.default, option=_OPTIONS | orjson.OPT_APPEND_NEWLINE)
        except (TypeError, OverflowError):  # (orjson.JSONEncodeError is a TypeError): say it as json would
            return super().response(*args, **kwargs)
        return cast("type[Response]", self._app.response_class)(body, mimetype=self.mimetype)
