"""The HTTP side of :mod:`wikimem.client`: the host's base URL, keep-alive connections
(one per thread, through a proxy if set), case-insensitive response headers, and what a
failed exchange means for a retry. Knows nothing of the API's JSON; stdlib only.
"""

from __future__ import annotations

import base64
import http.client
import os
import threading
import time
import urllib.parse
import urllib.request
import weakref
from collections.abc import Mapping
from email.utils import parsedate_to_datetime
from typing import Any

__all__ = ["API", "split_base_url", "Transport", "Headers", "retry_after", "no_answer", "describe_error", "refused"]

API = "/api/v1"


def retry_after(headers: Mapping[str, str]) -> float | None:
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


def no_answer(exc: BaseException) -> bool:
    """Whether an exception means the request got no HTTP answer (worth a retry)."""
    return isinstance(exc, (OSError, http.client.HTTPException))


def describe_error(exc: BaseException) -> str:
    """A short text of a failed exchange for a :class:`~wikimem.client.TransportError`."""
    if isinstance(exc, TimeoutError):
        return "timed out"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def refused(exc: BaseException) -> bool:
    """Whether the connection was refused (the server surely did nothing)."""
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


class Transport:
    """Keep-alive HTTP: one connection per thread (and process) to one host, through a proxy if set.

    A connection is reused for every request of its thread; one the server
    closed while idle is replaced transparently.
    """

    def __init__(self, scheme: str, host: str, port: int, timeout: float, proxies: Mapping[str, str] | None):
        self.scheme, self.host, self.port, self.timeout = scheme, host, port, timeout
        self.origin = f"{scheme}://{_netloc(host, port, scheme)}"
        self.proxy = _proxy_for(scheme, host, proxies)
        self._local = threading.local()
        self._open: weakref.WeakSet[http.client.HTTPConnection] = weakref.WeakSet()
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

    def get(self, key: str, default: Any = None) -> Any:
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

