"""A client of the wikimem host's JSON API (``/api/v1``) for bot workers; stdlib only.

    from wikimem.client import Client

    mem = Client("http://127.0.0.1:8000", token, owner="user:xnne")
    mem.create_owner()                                     # idempotent
    mem.add("preferences", "likes-the-sea", "Likes the sea; 喜欢大海.")
    mem.diary_append("Went to the beach with [[people:mia]].", tz="Asia/Shanghai")
    context = mem.retrieve("what does she like?", budget_tokens=400)   # a wikimem.RetrievalResult

Method names mirror the library (``add``, ``remove``, ``get``, ``items``,
``files``, ``retrieve``, ``diary_append``, …) and each one is one route of
SPEC §7. Values come back as the library's types (``RecallItem``,
``DiaryItem``, ``RetrievalResult``); writes return :class:`Written` with the
commit id.

Retries: a request is retried (``retries`` times, exponential ``backoff``)
on a connection error or timeout, on 502/503/504, on 429 after the
server's ``Retry-After``, and on a 409 ``remote_moved`` (a replicating host
whose write lost a race with another host's: nothing was applied); never on
another 4xx. Every write sends an
``Idempotency-Key`` made once per call and sent again on each retry, so a
write the server already applied is answered with its first result
(``replayed=True``) instead of being applied twice (revert, rollback and
restore too). Deleting an owner, which the server does not deduplicate, is
retried only when the server surely did nothing (connection refused, 429,
503).

Errors: any JSON error answer raises :class:`ClientError` (``status``,
``code``, ``message``) or the subclass of its status — :class:`NotFoundError`
(404), :class:`ConflictError` (409, with ``conflicts``),
:class:`PreconditionFailedError` (412, with ``current``), …; they also
subclass the library's own exceptions (``wikimem.errors.NotFound`` …), so
code written against the library catches them unchanged. A 400 is a
:class:`BadRequestError` (a ``ValueError``); only a 400 ``invalid_name`` is
also the library's ``InvalidName`` (:class:`InvalidNameError`). A request
that never got an answer raises :class:`TransportError` (``status`` 0).

Connections: each thread of a client keeps one HTTP/1.1 connection open and
reuses it (``close()`` or ``with Client(...)`` ends them); a connection the
server closed while idle is replaced without counting as a retry.

This module is not imported by ``import wikimem``.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import threading
import time
import urllib.parse
import urllib.request
import uuid
import weakref
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any, Callable, Iterable, Mapping

from .errors import Conflict, InvalidName, NotFound, PreconditionFailed, StoreBusy, WikimemError
from .models import DiaryItem, RecallItem
from .retrieval import RetrievalResult, RetrievedItem

__all__ = [
    "Client", "Written", "Fetched", "Page", "Memorized",
    "ClientError", "TransportError", "BadRequestError", "InvalidNameError", "UnauthorizedError", "ForbiddenError",
    "NotFoundError", "ConflictError", "PreconditionFailedError", "TooLargeError", "InvalidValueError",
    "RateLimitedError", "ServerError", "BusyError",
]

API = "/api/v1"
RETRY_STATUSES = frozenset({429, 502, 503, 504})
# Statuses that prove the server applied nothing (safe to retry a non-deduplicated operation).
_NOTHING_DONE_STATUSES = frozenset({429, 503})
USER_AGENT = "wikimem-client/1"


# -- errors --------------------------------------------------------------------

class ClientError(WikimemError):
    """The host answered with an error (or, as :class:`TransportError`, did not answer)."""

    def __init__(self, status: int, code: str, message: str, *, body: Mapping[str, Any] | None = None,
                 headers: Mapping[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.body = dict(body or {})
        self.headers = Headers(headers or {})

    def __str__(self) -> str:
        return f"{self.status} {self.code}: {self.message}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.status!r}, {self.code!r}, {self.message!r})"


class TransportError(ClientError):
    """No answer: connection refused or reset, or a timeout, after every retry."""

    def __init__(self, message: str, cause: BaseException | None = None):
        super().__init__(0, "transport_error", message)
        self.cause = cause


class BadRequestError(ClientError, ValueError):
    """400: a request the host refused as malformed (a missing or unknown field, a wrong type, …)."""


class InvalidNameError(BadRequestError, InvalidName):
    """400 ``invalid_name``: a file, item, owner, date or time name the library refuses to write."""


class UnauthorizedError(ClientError):
    """401: no token or an unknown token."""


class ForbiddenError(ClientError):
    """403: the token lacks the scope, or may not reach this owner."""


class NotFoundError(ClientError, NotFound):
    """404: unknown owner, item, commit or run."""


class ConflictError(ClientError, Conflict):
    """409: a revert or rollback blocked by later changes; ``conflicts`` lists them item by item."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.conflicts = list(self.body.get("conflicts") or [])


class PreconditionFailedError(ClientError, PreconditionFailed):
    """412: ``If-Match`` no longer holds; ``current`` is the current etag or commit."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.current = self.body.get("current")


class TooLargeError(ClientError):
    """413: the request body is larger than the host accepts."""


class InvalidValueError(ClientError, ValueError):
    """422: a value the library refuses."""


class RateLimitedError(ClientError):
    """429 after every retry."""


class ServerError(ClientError):
    """5xx."""


class BusyError(ServerError, StoreBusy):
    """503: the owner's write lock could not be taken in time (after every retry)."""


_BY_STATUS: dict[int, type[ClientError]] = {
    400: BadRequestError, 401: UnauthorizedError, 403: ForbiddenError, 404: NotFoundError,
    409: ConflictError, 412: PreconditionFailedError, 413: TooLargeError, 422: InvalidValueError,
    429: RateLimitedError, 503: BusyError,
}


def error_for(status: int, body: Any, headers: Mapping[str, str] | None = None,
              reason: str = "") -> ClientError:
    """The exception of an error answer (``body`` the decoded JSON, or None)."""
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, dict):
        code, message, extra = str(err.get("code") or "error"), str(err.get("message") or reason), err
    else:  # not our JSON: a proxy's HTML page, an empty body
        code, message, extra = "http_error", reason or f"HTTP {status}", {}
    cls = _BY_STATUS.get(status) or (ServerError if status >= 500 else ClientError)
    if cls is BadRequestError and code == InvalidName.code:
        cls = InvalidNameError
    return cls(status, code, message, body=extra, headers=headers)


# -- results -------------------------------------------------------------------

@dataclass
class Written:
    """What a write returns: its value, the commit it made, whether it was a replay, the item's etag."""

    value: Any
    commit: str | None
    replayed: bool = False
    etag: str | None = None


@dataclass
class Fetched:
    """An item with its etag (send it back as ``if_match=`` to refuse lost updates)."""

    item: RecallItem
    etag: str | None


@dataclass
class Page:
    """One page of a listing; pass ``next`` as ``cursor=`` for the following one (None: the last)."""

    entries: list[Any] = field(default_factory=list)
    next: str | None = None


@dataclass
class Memorized:
    """The outcome of :meth:`Client.memorize`; unpacks as ``entries, run, commit``."""

    entries: list[DiaryItem]
    run: str
    commit: str | None
    replayed: bool = False

    def __iter__(self):
        return iter((self.entries, self.run, self.commit))


def _memorized(data: Mapping[str, Any]) -> Memorized:
    return Memorized([_diary_item(e) for e in data.get("entries") or []], data.get("run", ""),
                     data.get("commit"), bool(data.get("replayed")))


def _recall_item(data: Mapping[str, Any]) -> RecallItem:
    return RecallItem(file=data["file"], name=data["name"], content=data["content"], owner=data.get("owner"),
                      source_conv=data.get("source_conv"), ts=data.get("ts"))


def _diary_item(data: Mapping[str, Any]) -> DiaryItem:
    return DiaryItem(date=data["date"], time=data["time"], content=data["content"], owner=data.get("owner"),
                     source_conv=data.get("source_conv"), ts=data.get("ts"))


def _retrieved(data: Mapping[str, Any]) -> RetrievedItem:
    return RetrievedItem(
        item=_recall_item(data["item"]), source=data["source"], score=data.get("score"),
        bm25_score=data.get("bm25_score"), cos_score=data.get("cos_score"), via=data.get("via"),
        matched_terms=list(data.get("matched_terms") or []), tokens_est=int(data.get("tokens_est") or 0),
        kind=data.get("kind") or "wiki", via_file=data.get("via_file"),
    )


def retrieval_result(data: Mapping[str, Any]) -> RetrievalResult:
    """A :class:`~wikimem.RetrievalResult` rebuilt from its JSON (``RetrievalResult.to_dict``)."""
    window = data.get("time_range")
    return RetrievalResult(
        items=[_retrieved(e) for e in data.get("items") or []],
        budget_tokens=data.get("budget_tokens"),
        budget_used=int(data.get("budget_used") or 0),
        embedding_used=bool(data.get("embedding_used")),
        dropped=[_retrieved(e) for e in data.get("dropped") or []],
        unresolved_links=list(data.get("unresolved_links") or []),
        time_range=(window[0], window[1]) if window else None,
        time_range_source=data.get("time_range_source"),
        time_range_widened=bool(data.get("time_range_widened")),
        query_terms=list(data.get("query_terms") or []),
    )


def _q(segment: str) -> str:
    """One path segment, percent-encoded (``/`` included)."""
    if not isinstance(segment, str) or not segment:
        raise ValueError(f"a path segment must be a non-empty string, got {segment!r}")
    return urllib.parse.quote(segment, safe="")


def _unquote_etag(value: str | None) -> str | None:
    if not value:
        return None
    value = value.strip()
    if value.startswith("W/"):
        value = value[2:]
    return value.strip('"') or None


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds of a ``Retry-After`` header (delta-seconds or an HTTP date), or None."""
    raw = headers.get("Retry-After")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _no_answer(exc: BaseException) -> bool:
    """Whether an exception means the request got no HTTP answer (worth a retry)."""
    return isinstance(exc, (OSError, http.client.HTTPException))


def _describe(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "timed out"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _refused(exc: BaseException) -> bool:
    return isinstance(exc, ConnectionRefusedError)


# A reused keep-alive connection the server closed meanwhile fails with one of these before any
# answer arrives; the request is sent again once on a new connection (not counted as a retry).
_STALE = (ConnectionResetError, BrokenPipeError, ConnectionAbortedError, http.client.RemoteDisconnected)


def split_base_url(base_url: str) -> tuple[str, str, int, str]:
    """``(scheme, host, port, path prefix)`` of a host's base URL; ``ValueError`` if it is not one.

    The URL may end in ``/api/v1`` (what the API documentation shows) or
    name a sub-path the host is mounted under behind a proxy.
    """
    if not isinstance(base_url, str) or not base_url.strip():
        raise ValueError(f"base_url must be a URL like http://127.0.0.1:8000, got {base_url!r}")
    parts = urllib.parse.urlsplit(base_url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"base_url must start with http:// or https:// and name a host, "
                         f"e.g. http://127.0.0.1:8000; got {base_url!r}")
    if parts.query or parts.fragment:
        raise ValueError(f"base_url may not have a query or fragment, got {base_url!r}")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise ValueError(f"base_url has an invalid port: {base_url!r}") from None
    prefix = parts.path.rstrip("/")
    if prefix.endswith(API):
        prefix = prefix[: -len(API)]
    return parts.scheme, parts.hostname, port, prefix


class _Transport:
    """Keep-alive HTTP: one connection per thread (and process) to one host, through a proxy if set.

    A connection is reused for every request of its thread; one the server
    closed while idle is replaced transparently.
    """

    def __init__(self, scheme: str, host: str, port: int, timeout: float, proxies: Mapping[str, str] | None):
        self.scheme, self.host, self.port, self.timeout = scheme, host, port, timeout
        self.origin = f"{scheme}://{_netloc(host, port, scheme)}"
        self.proxy = _proxy_for(scheme, host, proxies)
        self._local = threading.local()
        self._open: "weakref.WeakSet[http.client.HTTPConnection]" = weakref.WeakSet()
        self._lock = threading.Lock()

    def close(self) -> None:
        """Close every connection this transport opened (any thread may reconnect later)."""
        with self._lock:
            conns = list(self._open)
            self._open.clear()
        for conn in conns:
            conn.close()

    def _new(self) -> http.client.HTTPConnection:
        if self.proxy is None:
            cls = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
            conn = cls(self.host, self.port, timeout=self.timeout)
        else:
            p_host, p_port, auth = self.proxy
            tunnel = self.scheme == "https"
            cls = http.client.HTTPSConnection if tunnel else http.client.HTTPConnection
            conn = cls(p_host, p_port, timeout=self.timeout)
            if tunnel:
                conn.set_tunnel(self.host, self.port, headers={"Proxy-Authorization": auth} if auth else None)
        with self._lock:
            self._open.add(conn)
        return conn

    def _conn(self, fresh: bool) -> tuple[http.client.HTTPConnection, bool]:
        """This thread's connection and whether it already served a request."""
        local = self._local
        conn = getattr(local, "conn", None)
        if conn is not None and (fresh or local.pid != os.getpid()):  # never share a socket across fork
            self._drop(conn if local.pid == os.getpid() else None)
            conn = None
        if conn is None:
            local.conn, local.pid, local.used = self._new(), os.getpid(), False
        return local.conn, local.used

    def _drop(self, conn: http.client.HTTPConnection | None = None) -> None:
        conn = conn or getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            conn.close()
            with self._lock:
                self._open.discard(conn)

    def send(self, method: str, path: str, data: bytes | None, headers: Mapping[str, str],
             fresh: bool = False) -> tuple[int, str, dict[str, str], bytes]:
        """``(status, reason, headers, body)`` of one exchange; OSError / HTTPException if none."""
        headers = dict(headers)
        target = path
        if self.proxy is not None and self.scheme == "http":
            target = self.origin + path  # a plain-HTTP proxy takes the absolute URL
            if self.proxy[2]:
                headers["Proxy-Authorization"] = self.proxy[2]
        for attempt in (0, 1):
            conn, reused = self._conn(fresh or attempt > 0)
            try:
                conn.request(method, target, body=data, headers=headers)
                resp = conn.getresponse()
                payload = resp.read()
            except _STALE:
                self._drop()
                if reused and attempt == 0:
                    continue  # the server closed the idle connection: send again on a new one
                raise
            except BaseException:
                self._drop()
                raise
            self._local.used = True
            if resp.will_close:
                self._drop()
            return resp.status, resp.reason, Headers(resp.getheaders()), payload
        raise AssertionError("unreachable")


class Headers(dict):
    """Response headers; ``get`` and ``in`` ignore case, as HTTP does."""

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        low = key.lower()
        return next((v for k, v in self.items() if k.lower() == low), default)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key, _MISSING) is not _MISSING


_MISSING = object()


def _netloc(host: str, port: int, scheme: str) -> str:
    shown = f"[{host}]" if ":" in host else host
    default = 443 if scheme == "https" else 80
    return shown if port == default else f"{shown}:{port}"


def _proxy_for(scheme: str, host: str, proxies: Mapping[str, str] | None) -> tuple[str, int, str | None] | None:
    """``(host, port, Proxy-Authorization)`` of the proxy to use, or None to connect directly.

    ``proxies=None`` follows the ``*_proxy`` environment (and ``no_proxy``), as urllib does.
    """
    table = urllib.request.getproxies() if proxies is None else dict(proxies)
    url = table.get(scheme)
    if not url or urllib.request.proxy_bypass(host):
        return None
    parts = urllib.parse.urlsplit(url if "://" in url else "http://" + url)
    if not parts.hostname:
        raise ValueError(f"invalid {scheme} proxy {url!r}")
    auth = None
    if parts.username is not None:
        token = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
        auth = "Basic " + base64.b64encode(token.encode()).decode("ascii")
    return parts.hostname, parts.port or 8080, auth


# -- the client ----------------------------------------------------------------

class Client:
    """The JSON API of one wikimem host, for one default owner (``owner=``, overridable per call)."""

    def __init__(self, base_url: str, token: str | None, owner: str | None = None, timeout: float = 10.0,
                 retries: int = 2, backoff: float = 0.2, *, max_retry_after: float = 30.0,
                 proxies: Mapping[str, str] | None = None, user_agent: str = USER_AGENT):
        """``base_url`` is the host's root (``http://127.0.0.1:8000``; a trailing ``/api/v1`` is
        fine); a URL without ``http://`` or ``https://`` is a ``ValueError``. ``proxies=None``
        follows the ``*_proxy`` environment; ``{}`` connects directly."""
        if retries < 0 or backoff < 0 or timeout <= 0:
            raise ValueError("retries and backoff must be >= 0, timeout > 0")
        scheme, host, port, prefix = split_base_url(base_url)
        self._transport = _Transport(scheme, host, port, timeout, proxies)
        self._prefix = prefix
        self.base_url = self._transport.origin + prefix
        self.token = token
        self.owner = owner
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_retry_after = max_retry_after
        self.user_agent = user_agent
        self._sleep: Callable[[float], None] = time.sleep  # tests may replace it

    def close(self) -> None:
        """Close the client's keep-alive connections (a later call opens a new one)."""
        self._transport.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Client({self.base_url!r}, owner={self.owner!r})"

    # -- transport -------------------------------------------------------------

    def request(self, method: str, path: str, *, query: Mapping[str, Any] | None = None, body: Any = None,
                headers: Mapping[str, str] | None = None, write: bool = False, dedup: bool = True,
                raw: bool = False) -> tuple[Any, Mapping[str, str]]:
        """``(decoded JSON or bytes, headers)`` of one call, retried as the module docstring says.

        ``write`` adds an ``Idempotency-Key`` (one per call, the same on every
        retry); ``dedup=False`` marks a write the server does not deduplicate.
        """
        url = self._prefix + path
        if query:
            pairs = [(k, v if isinstance(v, str) else json.dumps(v)) for k, v in query.items() if v is not None]
            if pairs:
                url += "?" + urllib.parse.urlencode(pairs)
        send = {"Accept": "application/json", "User-Agent": self.user_agent}
        if self.token:
            send["Authorization"] = f"Bearer {self.token}"
        if write:
            send["Idempotency-Key"] = str(uuid.uuid4())
        send.update(headers or {})
        data = None
        if body is not None:
            data = json.dumps(body, ensure_ascii=False).encode("utf-8")
            send["Content-Type"] = "application/json; charset=utf-8"
        attempt = 0
        while True:
            delay = self._backoff(attempt)
            try:
                # A write the server does not deduplicate goes on a new connection: a reused one
                # that fails could not tell "closed while idle" from "died while applying it".
                return self._once(method, url, data, send, raw, fresh=write and not dedup)
            except ClientError as exc:
                moved = exc.status == 409 and exc.code == "remote_moved"  # nothing applied: another host wrote
                if attempt >= self.retries or (exc.status not in RETRY_STATUSES and not moved):
                    raise
                if write and not dedup and exc.status not in _NOTHING_DONE_STATUSES and not moved:
                    raise
                hinted = _retry_after(exc.headers)
                if hinted is not None:
                    delay = min(hinted, self.max_retry_after)
            except (OSError, http.client.HTTPException) as exc:
                if not _no_answer(exc):
                    raise
                if attempt >= self.retries or (write and not dedup and not _refused(exc)):
                    raise TransportError(f"{method} {self.base_url}{path}: {_describe(exc)}", exc) from exc
            attempt += 1
            self._sleep(delay)

    def _backoff(self, attempt: int) -> float:
        return self.backoff * (2 ** attempt)

    def _once(self, method: str, url: str, data: bytes | None, headers: Mapping[str, str],
              raw: bool, fresh: bool = False) -> tuple[Any, Mapping[str, str]]:
        status, reason, got, payload = self._transport.send(method, url, data, headers, fresh)
        if status >= 300:
            try:
                decoded = json.loads(payload.decode("utf-8")) if payload else None
            except (ValueError, UnicodeDecodeError):
                decoded = None
            if 300 <= status < 400:  # the API never redirects: the base URL points elsewhere
                reason = f"HTTP {status} redirect to {got.get('Location')!r}: is {self.base_url!r} the host's root?"
            raise error_for(status, decoded, got, reason)
        if raw:
            return payload, got
        return (json.loads(payload.decode("utf-8")) if payload else None), got

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        return self.request(method, path, **kwargs)[0]

    def _owner_path(self, owner: str | None) -> str:
        owner = owner or self.owner
        if not owner:
            raise ValueError("no owner: pass owner= to the call or to Client(...)")
        return f"{API}/owners/{_q(owner)}"

    def _item_path(self, owner: str | None, file: str, name: str) -> str:
        return f"{self._owner_path(owner)}/items/{_q(file)}/{_q(name)}"

    @staticmethod
    def _precondition(if_match: str | None) -> dict[str, str]:
        return {"If-Match": f'"{if_match}"'} if if_match else {}

    @staticmethod
    def _fields(**kwargs: Any) -> dict[str, Any]:
        return {k: v for k, v in kwargs.items() if v is not None}

    # -- service ---------------------------------------------------------------

    def health(self) -> bool:
        """Whether ``/healthz`` answers ``{"ok": true}``."""
        return bool((self._call("GET", "/healthz") or {}).get("ok"))

    def version(self) -> dict[str, Any]:
        return self._call("GET", f"{API}/version")

    # -- owners ----------------------------------------------------------------

    def owners(self, *, prefix: str | None = None, limit: int = 50, cursor: str | None = None) -> Page:
        """A page of owners: dicts with ``id``, ``items``, ``files``, ``diary_days``, ``last_change``, ``head``."""
        data = self._call("GET", f"{API}/owners", query={"prefix": prefix, "limit": str(limit), "cursor": cursor})
        return Page(data["owners"], data.get("next"))

    def create_owner(self, owner: str | None = None) -> dict[str, Any]:
        """Create the owner (idempotent); ``{"owner": stats, "created": bool}``."""
        return self._call("PUT", self._owner_path(owner))

    def owner_stats(self, owner: str | None = None) -> dict[str, Any]:
        return self._call("GET", self._owner_path(owner))

    def delete_owner(self, owner: str | None = None) -> None:
        """Delete an owner and all its history (admin)."""
        self._call("DELETE", self._owner_path(owner), write=True, dedup=False)

    def export(self, *, owner: str | None = None, format: str = "zip") -> bytes:
        """An archive (``zip`` or ``tar``) of the owner's markdown."""
        return self.request("GET", self._owner_path(owner) + "/export", query={"format": format}, raw=True)[0]

    # -- wiki ------------------------------------------------------------------

    def files(self, *, owner: str | None = None) -> list[str]:
        return self._call("GET", self._owner_path(owner) + "/files")["files"]

    def items(self, file: str | None = None, *, owner: str | None = None) -> list[RecallItem]:
        data = self._call("GET", self._owner_path(owner) + "/items", query={"file": file})
        return [_recall_item(i) for i in data["items"]]

    def fetch(self, file: str, name: str, *, owner: str | None = None) -> Fetched:
        """One item with its etag; :class:`NotFoundError` if there is none."""
        data, headers = self.request("GET", self._item_path(owner, file, name))
        return Fetched(_recall_item(data["item"]), _unquote_etag(headers.get("ETag")))

    def get(self, file: str, name: str, *, owner: str | None = None) -> RecallItem:
        """One item; :class:`NotFoundError` if there is none (unlike the library's ``None``:
        over HTTP an unknown owner is a 404 too, and must not pass for an empty memory)."""
        return self.fetch(file, name, owner=owner).item

    def add(self, file: str, name: str, content: str, *, owner: str | None = None, source_conv: str | None = None,
            ts: str | None = None, run: str | None = None, actor: str | None = None,
            if_match: str | None = None) -> Written:
        """Add or update an item; ``if_match`` (an etag or commit id) refuses a lost update with 412."""
        body = self._fields(content=content, source_conv=source_conv, ts=ts, run=run, actor=actor)
        data, headers = self.request("PUT", self._item_path(owner, file, name), body=body, write=True,
                                     headers=self._precondition(if_match))
        return Written(_recall_item(data["item"]), data.get("commit"), bool(data.get("replayed")),
                       _unquote_etag(headers.get("ETag")))

    def remove(self, file: str, name: str, *, owner: str | None = None, run: str | None = None,
               actor: str | None = None, if_match: str | None = None) -> Written:
        """Remove an item; :class:`NotFoundError` if there was none."""
        body = self._fields(run=run, actor=actor) or None
        data = self._call("DELETE", self._item_path(owner, file, name), body=body, write=True,
                          headers=self._precondition(if_match))
        return Written(bool(data.get("removed")), data.get("commit"), bool(data.get("replayed")))

    # -- diary -----------------------------------------------------------------

    def diary_append(self, content: str, *, owner: str | None = None, ts: str | None = None,
                     date: str | None = None, time: str | None = None, tz: str | None = None,
                     source_conv: str | None = None, run: str | None = None, actor: str | None = None) -> Written:
        """Append one diary event (never twice, even when a retry follows a timeout)."""
        body = self._fields(content=content, ts=ts, date=date, time=time, tz=tz, source_conv=source_conv,
                            run=run, actor=actor)
        data = self._call("POST", self._owner_path(owner) + "/diary", body=body, write=True)
        return Written(_diary_item(data["entry"]), data.get("commit"), bool(data.get("replayed")))

    def diary_dates(self, *, owner: str | None = None) -> list[str]:
        return self._call("GET", self._owner_path(owner) + "/diary/dates")["dates"]

    def diary_day(self, date: str, *, owner: str | None = None) -> list[DiaryItem]:
        data = self._call("GET", f"{self._owner_path(owner)}/diary/{_q(date)}")
        return [_diary_item(e) for e in data["entries"]]

    def diary_window(self, start: str, end: str, *, owner: str | None = None) -> list[DiaryItem]:
        """Entries of the closed interval of local dates ``start``..``end``."""
        data = self._call("GET", self._owner_path(owner) + "/diary", query={"start": start, "end": end})
        return [_diary_item(e) for e in data["entries"]]

    def diary_tool(self, arguments: Any, *, owner: str | None = None, ts: str | None = None,
                   date: str | None = None, time: str | None = None, tz: str | None = None,
                   source_conv: str | None = None, run: str | None = None, actor: str | None = None) -> Written:
        """Handle an ``append_diary`` tool call; a bad call raises :class:`BadRequestError` whose
        ``message`` is written to be returned to the agent."""
        body = self._fields(arguments=arguments, ts=ts, date=date, time=time, tz=tz, source_conv=source_conv,
                            run=run, actor=actor)
        data = self._call("POST", self._owner_path(owner) + "/diary-tool", body=body, write=True)
        return Written(_diary_item(data["entry"]), data.get("commit"), bool(data.get("replayed")))

    # -- batches, retrieval, memorize -------------------------------------------

    def batch(self, ops: Iterable[Mapping[str, Any]], *, owner: str | None = None, run: str | None = None,
              actor: str | None = None, message: str | None = None, source_conv: str | None = None,
              if_match: str | None = None) -> dict[str, Any]:
        """Several writes as one commit: ``{"results": [...], "commit": ..., "replayed": ...}``."""
        body = self._fields(ops=list(ops), run=run, actor=actor, message=message, source_conv=source_conv)
        return self._call("POST", self._owner_path(owner) + "/batch", body=body, write=True,
                          headers=self._precondition(if_match))

    def retrieve(self, query: str, *, owner: str | None = None, limit: int = 10, budget_tokens: int | None = None,
                 expand_links: bool = True, explain: bool = False, time_range: tuple[str, str] | None = None,
                 tz: str | None = None, as_of: str | None = None) -> RetrievalResult:
        """``MemoryIndex.retrieve`` on the host; ``as_of`` (a commit id or ISO time) searches the past."""
        body = self._fields(query=query, limit=limit, budget_tokens=budget_tokens, expand_links=expand_links,
                            explain=explain, time_range=list(time_range) if time_range else None, tz=tz,
                            as_of=as_of)
        return retrieval_result(self._call("POST", self._owner_path(owner) + "/retrieve", body=body))

    def memorize(self, turn: str, *, owner: str | None = None, character: str | None = None,
                 prompt: str | None = None, ts: str | None = None, tz: str | None = None,
                 source_conv: str | None = None, run: str | None = None, actor: str | None = None) -> Memorized:
        """Run the host's LLM over one turn; what it keeps is appended as one run and one commit.

        The request lasts as long as the model thinks; :meth:`memorize_async` answers at once.
        """
        body = self._fields(turn=turn, character=character, prompt=prompt, ts=ts, tz=tz, source_conv=source_conv,
                            run=run, actor=actor)
        data = self._call("POST", self._owner_path(owner) + "/memorize", body=body, write=True)
        return _memorized(data)

    def memorize_async(self, turn: str, *, owner: str | None = None, character: str | None = None,
                       prompt: str | None = None, ts: str | None = None, tz: str | None = None,
                       source_conv: str | None = None, run: str | None = None, actor: str | None = None,
                       key: str | None = None) -> dict[str, Any]:
        """Memorize as a background job (``Prefer: respond-async``): the job, at once (``id``,
        ``state``, ``params.run``); follow it with :meth:`job` or :meth:`wait_job`. ``key`` is the
        Idempotency-Key (default: a new one, the same on every retry): the same key is the same job."""
        body = self._fields(turn=turn, character=character, prompt=prompt, ts=ts, tz=tz, source_conv=source_conv,
                            run=run, actor=actor)
        headers = {"Prefer": "respond-async", **({"Idempotency-Key": key} if key else {})}
        return self._call("POST", self._owner_path(owner) + "/memorize", body=body, write=True, headers=headers)

    def job(self, job_id: str) -> dict[str, Any]:
        """A background job: ``state`` (queued, running, done, failed), ``done``/``total``, ``results``."""
        return self._call("GET", f"{API}/jobs/{_q(job_id)}")

    def wait_job(self, job: str | Mapping[str, Any], *, timeout: float = 120.0, poll: float = 0.5) -> dict[str, Any]:
        """Poll a job until it is done or failed (``TimeoutError`` after ``timeout`` seconds)."""
        job_id = job if isinstance(job, str) else job["id"]
        deadline = time.monotonic() + timeout
        while True:
            found = self.job(job_id)
            if found.get("state") in ("done", "failed"):
                return found
            if time.monotonic() >= deadline:
                raise TimeoutError(f"job {job_id} still {found.get('state')} after {timeout:g} s")
            self._sleep(poll)

    # -- settings ----------------------------------------------------------------

    def settings(self, *, owner: str | None = None) -> dict[str, Any]:
        """The owner's settings (``tz``, ``character``; None when unset)."""
        return self._call("GET", self._owner_path(owner) + "/settings")["settings"]

    def set_settings(self, *, owner: str | None = None, run: str | None = None, actor: str | None = None,
                     **values: Any) -> Written:
        """Set some settings as one commit (``tz="Asia/Shanghai"``; ``None`` unsets one; the others stay)."""
        body = {**values, **self._fields(run=run, actor=actor)}
        data = self._call("PUT", self._owner_path(owner) + "/settings", body=body, write=True)
        return Written(data["settings"], data.get("commit"), bool(data.get("replayed")))

    # -- history ---------------------------------------------------------------

    def history(self, *, owner: str | None = None, file: str | None = None, item: str | None = None,
                run: str | None = None, limit: int = 50, cursor: str | None = None) -> Page:
        """Commits newest first (dicts with ``id``, ``time``, ``actor``, ``run``, ``action``, ``summary``, …)."""
        data = self._call("GET", self._owner_path(owner) + "/history",
                          query={"file": file, "item": item, "run": run, "limit": str(limit), "cursor": cursor})
        return Page(data["entries"], data.get("next"))

    def commit(self, id: str, *, owner: str | None = None) -> dict[str, Any]:
        """One commit: ``entry``, per-item ``changes`` (before / after) and the text ``patch``."""
        return self._call("GET", f"{self._owner_path(owner)}/commits/{_q(id)}")

    def diff(self, from_: str, to: str = "HEAD", *, owner: str | None = None) -> dict[str, Any]:
        """Per-item changes between two points (commit ids, ``HEAD~N`` or ISO times)."""
        return self._call("GET", self._owner_path(owner) + "/diff", query={"from": from_, "to": to})

    def _operation(self, route: str, field_name: str, target: str, owner: str | None, **flags: Any) -> Any:
        body = self._fields(**{field_name: target}, **flags)
        preview = bool(flags.get("preview"))  # a preview writes nothing: retried like a read
        return self._call("POST", f"{self._owner_path(owner)}/{route}", body=body, write=not preview)

    def revert(self, commit: str, *, owner: str | None = None, force: bool = False,
               actor: str | None = None) -> str:
        """Undo one commit item by item; the new commit id, or :class:`ConflictError` (``conflicts``)."""
        return self._operation("revert", "commit", commit, owner, force=force or None, actor=actor)["commit"]

    def rollback(self, run: str, *, owner: str | None = None, force: bool = False,
                 actor: str | None = None) -> str:
        """Undo every commit of a run as one commit; the new commit id, or :class:`ConflictError`."""
        return self._operation("rollback", "run", run, owner, force=force or None, actor=actor)["commit"]

    def restore(self, to: str, *, owner: str | None = None, actor: str | None = None) -> str:
        """Make the memory what it was at a commit or ISO time, as one new commit; its id."""
        return self._operation("restore", "to", to, owner, actor=actor)["commit"]

    def preview_revert(self, commit: str, *, owner: str | None = None) -> Any:
        """What :meth:`revert` would change (and its conflicts), writing nothing."""
        return self._operation("revert", "commit", commit, owner, preview=True)["plan"]

    def preview_rollback(self, run: str, *, owner: str | None = None) -> Any:
        return self._operation("rollback", "run", run, owner, preview=True)["plan"]

    def preview_restore(self, to: str, *, owner: str | None = None) -> Any:
        return self._operation("restore", "to", to, owner, preview=True)["plan"]
