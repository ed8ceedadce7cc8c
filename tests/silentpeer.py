"""A peer that accepts TCP connections and never answers: the worst kind of down for a cluster.

``with SilentPeer() as peer: peer.url`` — a real socket on 127.0.0.1 that
accepts every connection and holds it open, reading nothing and writing
nothing, until the block ends. ``peer.accepted`` counts the connections.
"""

from __future__ import annotations

import socket
import threading


class SilentPeer:
    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(256)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.accepted = 0
        self._held: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self) -> None:
        self.sock.settimeout(0.1)
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            self._held.append(conn)  # never read, never answered, never closed until the end

    def __enter__(self) -> SilentPeer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(5)
        for conn in self._held:
            conn.close()
        self.sock.close()
