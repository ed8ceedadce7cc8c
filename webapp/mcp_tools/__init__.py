"""``/mcp``: the host's memory as MCP tools (the Model Context Protocol, streamable HTTP).

Design notes: docs/explanation/mcp.md (``webapp/mcp_tools/__init__.py``).
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Flask, Response, current_app, request

from webapp.auth import current_principal
from webapp.hosting import get_host

from .bridge import AsgiBridge

__all__ = ["bp", "init_app", "PATH"]

PATH = "/mcp"
_EXT = "wikimem.mcp"

bp = Blueprint("mcp", __name__)  # a blueprint so that CSRF (for the UI's forms) can exempt it as it does the API


def init_app(app: Flask) -> None:
    """Serve ``/mcp`` in ``app`` (the SDK itself is loaded by the first request)."""
    app.extensions[_EXT] = AsgiBridge(_make_handler)
    app.register_blueprint(bp)


def _make_handler():
    """The SDK's handler and the lifespan it runs in (once per process)."""
    from mcp.server.transport_security import TransportSecuritySettings

    from .tools import build_server

    server = build_server()
    server.streamable_http_app(streamable_http_path=PATH, json_response=True, stateless_http=True,
                               transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
    manager = server.session_manager
    return manager.handle_request, manager.run()


def _scope(caller: Any) -> dict[str, Any]:
    """The ASGI scope of this request, carrying who calls (:data:`~webapp.mcp_tools.tools.CALLER`)."""
    from .tools import CALLER

    host, _, port = request.host.partition(":")
    headers = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in request.headers.items()]
    return {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
            "method": request.method, "scheme": request.scheme, "path": PATH, "raw_path": PATH.encode(),
            "root_path": "", "query_string": request.query_string, "headers": headers,
            "client": (request.remote_addr or "", 0),
            "server": (host, int(port) if port.isdigit() else (443 if request.scheme == "https" else 80)),
            CALLER: caller}


@bp.post(PATH)
def mcp() -> Response:
    from .tools import Caller

    caller = Caller(current_principal(), get_host())  # 401 here, before the SDK sees anything
    body = request.get_data()  # bounded by MAX_CONTENT_LENGTH (413)
    answer = current_app.extensions[_EXT].call(_scope(caller), body)
    headers = [(k, v) for k, v in answer.headers if k.lower() != "content-length"]
    return Response(answer.body, status=answer.status, headers=headers)
