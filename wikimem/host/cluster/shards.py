"""Which host an owner lives on: nginx's ``hash $owner consistent``, computed the same way here.

nginx's consistent hashing (``ngx_http_upstream_hash_module``, ketama): each
``server host:port`` of the upstream gets 160 points (× weight) on a 32-bit
ring — point *j* is the CRC-32 of ``host``, a NUL, ``port`` and the little-
endian bytes of point *j−1* (0 for the first); a key goes to the first point
at or after the CRC-32 of the key, wrapping around. :class:`Ring` reproduces
that, so the cluster commands know where nginx sends an owner without asking
it (``tests/cluster/test_balancer.py`` checks it against a real nginx).
"""

from __future__ import annotations

import bisect
import struct
import zlib
from dataclasses import dataclass, field

__all__ = ["Ring"]

POINTS_PER_WEIGHT = 160


def _split(server: str) -> tuple[bytes, bytes]:
    """``host``, ``port`` as nginx splits the ``server`` string (trailing ``:digits`` is the port)."""
    raw = server.encode()
    if raw[:5].lower() == b"unix:":
        return raw[5:], b""
    host, sep, port = raw.rpartition(b":")
    if sep and port.isdigit():
        return host, port
    return raw, b""


@dataclass
class Ring:
    """The consistent-hash ring of an upstream's servers, as written in nginx.conf (``10.0.0.11:8000``)."""

    servers: list[str]
    weights: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.servers:
            raise ValueError("a ring needs at least one server")
        points: dict[int, str] = {}
        for server in self.servers:
            host, port = _split(server)
            base = host + b"\0" + port
            prev = 0
            for _ in range(POINTS_PER_WEIGHT * self.weights.get(server, 1)):
                value = zlib.crc32(base + struct.pack("<I", prev))
                points.setdefault(value, server)  # equal hashes: one survives (nginx keeps one too)
                prev = value
        self._hashes = sorted(points)
        self._owners = [points[h] for h in self._hashes]

    def server_for(self, key: str) -> str:
        """The server nginx picks for ``key`` (the owner id) while every server is up."""
        return self.servers_for(key)[0]

    def servers_for(self, key: str) -> list[str]:
        """Every server in the order nginx tries them for ``key`` (the next ones take over when one is down)."""
        h = zlib.crc32(key.encode())
        i = bisect.bisect_left(self._hashes, h)
        out: list[str] = []
        for k in range(len(self._hashes)):
            server = self._owners[(i + k) % len(self._hashes)]
            if server not in out:
                out.append(server)
                if len(out) == len(set(self.servers)):
                    break
        return out
