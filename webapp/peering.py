"""Host-to-host requests of a cluster: the owner listing and the run search gathered from every peer, and
logouts told to every peer.

The host that serves a listing asks each peer for its own page with a
short-lived token signed by the shared ``WIKIMEM_SECRET_KEY`` (header
``X-Wikimem-Peer``), carrying the owner-id prefix the caller may see. A peer
accepts it in place of the caller's credentials for those listings only, and
answers from its own data root (it never asks its peers in turn). So an
API token and an admin session list the same owners (and find the same runs)
behind nginx as on one host, and nothing else is reachable with a peer token.
"""

from __future__ import annotations

import math

from flask import current_app, request
from itsdangerous import BadSignature, URLSafeTimedSerializer

from wikimem.host import BadRequest, Within, within_of

from .auth import require

__all__ = ["PEER_HEADER", "REVOKED_PATH", "forward_for", "listing_scope", "tell_revoked", "revocation_from"]

PEER_HEADER = "X-Wikimem-Peer"
MAX_AGE = 60  # seconds a peer token is good for (clocks of a cluster agree to well within this)


def _signer() -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(current_app.config["SECRET_KEY"], salt="wikimem-peer-listing")


def forward_for(within: Within) -> dict | None:
    """Headers that let the peers list what a caller scoped to ``within`` may see (None: no peers, or a peer call)."""
    if current_app.config.get("PEER_SET") is None or request.headers.get(PEER_HEADER):
        return None
    return {PEER_HEADER: _signer().dumps({"within": within if isinstance(within, str) else list(within)})}


REVOKED_PATH = "/api/v1/peer/revoked"


def _revocations() -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(current_app.config["SECRET_KEY"], salt="wikimem-peer-revoked")


# Seconds a logout waits for its notice's first round to reach the peers (it goes on in the background).
NOTICE_WAIT = 0.5


def tell_revoked(sid: str, until: float) -> list[str]:
    """Tell every peer that session ``sid`` ended (a logout on this host): the peers that had not taken it
    within :data:`NOTICE_WAIT` (they are retried in the background until the session would have ended).

    Sessions are valid on every host of a cluster, logouts are recorded per
    data root: without this a cookie signed out on one host would still be
    accepted by the others until its lifetime ends. A peer that is down
    costs a logout at most :data:`NOTICE_WAIT`, never the peer timeout.
    """
    peers = current_app.config.get("PEER_SET")
    if peers is None:
        return []
    signer = _revocations()
    delivery = peers.deliver(REVOKED_PATH, lambda: {"token": signer.dumps({"sid": sid, "until": float(until)})},
                             until=float(until))
    if delivery.wait(NOTICE_WAIT):
        return []
    missed = list(delivery.missing)
    current_app.logger.warning("logout of session %s not taken by peers %s yet; retrying in the background",
                               sid[:8], ", ".join(missed))
    return missed


def revocation_from(token) -> tuple[str, float] | None:
    """``(sid, until)`` of a peer's signed logout notice, or None when it is not one of ours or too old.

    A notice that is signed but malformed (no session id, an ``until`` that is
    not a finite time such as ``NaN``) is a :class:`BadRequest`.
    """
    try:
        data = _revocations().loads(token, max_age=MAX_AGE) if isinstance(token, str) else None
    except BadSignature:
        return None
    if data is None:
        return None
    until = data.get("until") if isinstance(data, dict) else None
    if not (isinstance(data, dict) and isinstance(data.get("sid"), str) and 0 < len(data["sid"]) <= 128
            and isinstance(until, (int, float)) and not isinstance(until, bool) and math.isfinite(until)):
        raise BadRequest("a logout notice needs a session id and until, a finite time in seconds")
    return data["sid"], float(until)


def listing_scope() -> Within:
    """The owner-id prefix a listing request may see: from a valid peer token, else from the caller's token."""
    token = request.headers.get(PEER_HEADER)
    if token:
        try:
            within = _signer().loads(token, max_age=MAX_AGE)["within"]
            return within if isinstance(within, str) else within_of([str(p) for p in within])
        except (BadSignature, KeyError, TypeError):
            pass
    return require("read").within
