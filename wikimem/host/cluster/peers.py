"""The other hosts of a cluster (``WIKIMEM_PEERS``), asked for what spans every host: the owner listing.

Owners are sharded across hosts, so a listing (and the admin UI's owner
search, which is a listing by prefix) gathers each host's own page and
merges them. A peer is asked with the headers the web layer gives (a short-lived
token signed with the shared secret key, carrying the owner-id prefix the
caller may see; see ``webapp/peering.py``), so it shows exactly what the
caller may see, from its own data root only (no fan-out of fan-outs). A peer that does not answer makes
the page *partial* (its URL is reported), never an error.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

__all__ = ["Peers", "merge_owner_pages"]
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _normal(url: str) -> str:
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ValueError(f"a peer must be an http(s) base URL like http://10.0.0.11:8000, not {url!r}")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme}://{parts.hostname}:{port}{parts.path.rstrip('/')}"


@dataclass(frozen=True)
class Peers:
    """Every host's base URL, and which one is this host."""

    urls: tuple[str, ...]
    self_url: str | None = None
    timeout: float = 5.0

    @classmethod
    def parse(cls, text: str, self_url: str | None = None, bind: str | None = None) -> Peers:
        """``WIKIMEM_PEERS`` (comma- or space-separated URLs); this host is ``self_url``, else the one on ``bind``."""
        urls = tuple(dict.fromkeys(_normal(u) for u in str(text).replace(",", " ").split()))
        if not urls:
            raise ValueError("WIKIMEM_PEERS lists no host")
        me = _normal(self_url) if self_url else None
        if me is None and bind and not str(bind).startswith("unix:"):
            host, _, port = str(bind).rpartition(":")
            me = next((u for u in urls if urllib.parse.urlsplit(u).netloc == f"{host}:{port}"), None)
        return cls(urls, me)

    def others(self) -> list[str]:
        return [u for u in self.urls if u != self.self_url]

    def get(self, path: str, query: dict, headers: dict) -> tuple[list[dict], list[str]]:
        """GET ``path?query`` from every other peer at once: (answers, URLs of peers that did not answer)."""
        targets = self.others()
        if not targets:
            return [], []
        qs = urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})

        def one(base: str):
            req = urllib.request.Request(f"{base}{path}?{qs}", headers=dict(headers))
            try:
                with _NO_PROXY.open(req, timeout=self.timeout) as resp:
                    return base, json.load(resp)
            except (OSError, ValueError, urllib.error.HTTPError):
                return base, None

        with ThreadPoolExecutor(max_workers=min(8, len(targets))) as pool:
            answers = list(pool.map(one, targets))
        return [a for _, a in answers if a is not None], [b for b, a in answers if a is None]


    def post(self, path: str, body: dict, headers: dict) -> list[str]:
        """POST ``body`` (JSON) to ``path`` of every other peer at once: the URLs of peers that did not take it."""
        targets = self.others()
        data = json.dumps(body).encode()

        def one(base: str) -> bool:
            req = urllib.request.Request(f"{base}{path}", data=data, method="POST",
                                         headers={"Content-Type": "application/json", **headers})
            try:
                with _NO_PROXY.open(req, timeout=self.timeout) as resp:
                    return 200 <= resp.status < 300
            except (OSError, ValueError, urllib.error.HTTPError):
                return False

        if not targets:
            return []
        with ThreadPoolExecutor(max_workers=min(8, len(targets))) as pool:
            taken = list(pool.map(one, targets))
        return [b for b, ok in zip(targets, taken) if not ok]


def merge_owner_pages(pages: list[tuple[list[dict], str | None]], limit: int) -> tuple[list[dict], str | None]:
    """One page of owners from each host's page (sorted by id): the first ``limit`` ids, and the next cursor.

    An owner held by two hosts (a stale copy after a failover) is listed
    once, with the stats of the copy that changed last.
    """
    best: dict[str, dict] = {}
    more = False
    for rows, nxt in pages:
        more = more or nxt is not None
        for row in rows:
            seen = best.get(row["id"])
            if seen is None or (row.get("last_change") or "") > (seen.get("last_change") or ""):
                best[row["id"]] = row
    ids = sorted(best)
    page = ids[:limit]
    more = more or len(ids) > limit
    return [best[i] for i in page], (page[-1] if more and page else None)
