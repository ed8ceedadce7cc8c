"""The development server of ``wikimem serve`` (``make run``): werkzeug's threaded server on a socket opened first.

The socket is opened before anything else is made, so a port in use is
reported by the command in its own words (``WIKIMEM_BIND``), not by
werkzeug's hint, and ``HOST:0`` gives the port the system picked.
Production runs gunicorn (``deploy/gunicorn.conf.py``).
"""

from __future__ import annotations

import socket

from flask import Flask
from werkzeug.serving import get_sockaddr, make_server, select_address_family

__all__ = ["listen", "serve", "free_port_after"]


def listen(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (``OSError`` if it cannot be had, e.g. the port is in use)."""
    family = select_address_family(host, port)
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as werkzeug does: never over a live listener
        sock.bind(get_sockaddr(host, port, family))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def free_port_after(host: str, port: int, tries: int = 50) -> int | None:
    """The first port after ``port`` that ``host`` can listen on now (None if ``tries`` ports are all taken)."""
    for candidate in range(port + 1, min(port + 1 + tries, 65536)):
        try:
            listen(host, candidate).close()
        except OSError:
            continue
        return candidate
    return None


def serve(app: Flask, host: str, listener: socket.socket) -> None:
    """Serve ``app`` on ``listener`` (threads) until interrupted; then close it."""
    server = make_server(host, listener.getsockname()[1], app, threaded=True, fd=listener.fileno())
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        listener.close()
