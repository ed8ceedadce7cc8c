"""A client of the wikimem host's JSON API (``/api/v1``) for bot workers; stdlib only.

    from wikimem.client import Client

    mem = Client("http://127.0.0.1:8000", token, owner="user:xnne")
    mem.create_owner()                                     # idempotent
    mem.add("preferences", "likes-the-sea", "Likes the sea; 喜欢大海.")
    context = mem.retrieve("what does she like?", budget_tokens=400)   # a wikimem.RetrievalResult

Method names mirror the library and each calls one operation of the API's OpenAPI document; every call goes
through the client's :class:`~wikimem.client.session.Session`. ``character=`` on a memory call addresses that
character's layer of the person's folder (SPEC §11; without it, the shared layer). Preconditions, retries,
idempotency keys, errors and connections: docs/explanation/api-client.md.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterable, Mapping
from typing import Any

from wikimem.models import DiaryItem, RecallItem
from wikimem.recall import RetrievalResult

from .errors import ClientError
from .results import Fetched, Memorized, Page, Written, diary_item, memorized, recall_item, retrieval_result
from .session import USER_AGENT, Session, if_match_header, unquote_etag
from .session import quote_segment as _q
from .transport import API

__all__ = ["Client"]


def _kept(name: str) -> property:
    """A setting of the client its :class:`Session` keeps (read and written there)."""
    return property(lambda self: getattr(self.session, name), lambda self, value: setattr(self.session, name, value))


# -- the client ----------------------------------------------------------------

class Client:
    """The JSON API of one wikimem host, for one default owner (``owner=``, overridable per call)."""

    def __init__(self, base_url: str, token: str | None, owner: str | None = None, timeout: float = 10.0,
                 retries: int = 2, backoff: float = 0.2, *, max_retry_after: float = 30.0,
                 proxies: Mapping[str, str] | None = None, user_agent: str = USER_AGENT):
        """``base_url`` is the host's root (``http://127.0.0.1:8000``; a trailing ``/api/v1`` is
        fine); a URL without ``http://`` or ``https://`` is a ``ValueError``. ``proxies=None``
        follows the ``*_proxy`` environment; ``{}`` connects directly."""
        self.session = Session(base_url, token, timeout=timeout, retries=retries, backoff=backoff,
                               max_retry_after=max_retry_after, proxies=proxies, user_agent=user_agent)
        self.base_url = self.session.base_url
        self.owner = owner

    token = _kept("token")
    timeout = _kept("timeout")
    retries = _kept("retries")
    backoff = _kept("backoff")
    max_retry_after = _kept("max_retry_after")
    user_agent = _kept("user_agent")

    def close(self) -> None:
        """Close the client's keep-alive connections (a later call opens a new one)."""
        self.session.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Client({self.base_url!r}, owner={self.owner!r})"

    # -- transport -------------------------------------------------------------

    @property
    def api_url(self) -> str:
        """The API's base URL (``…/api/v1``): what :meth:`request` paths are relative to."""
        return self.base_url + API

    def request(self, method: str, path: str, *, query: Mapping[str, Any] | None = None, body: Any = None,
                headers: Mapping[str, str] | None = None, write: bool = False, dedup: bool = True,
                raw: bool = False, retries: int | None = None) -> tuple[Any, Mapping[str, str]]:
        """``(decoded JSON or bytes, headers)`` of one call, retried (:meth:`Session.request`).

        ``path`` is relative to the API (``"/owners/user:ann/files"``); ``write`` adds an ``Idempotency-Key``
        (the same on every retry); ``dedup=False`` marks a write the server does not deduplicate."""
        return self.session.request(method, path, query=query, body=body, headers=headers, write=write,
                                    dedup=dedup, raw=raw, retries=retries)

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        return self.request(method, path, **kwargs)[0]

    def _owner_path(self, owner: str | None) -> str:
        owner = owner or self.owner
        if not owner:
            raise ValueError("no owner: pass owner= to the call or to Client(...)")
        return f"/owners/{_q(owner)}"

    def _item_path(self, owner: str | None, file: str, name: str) -> str:
        return f"{self._owner_path(owner)}/items/{_q(file)}/{_q(name)}"

    @staticmethod
    def _precondition(if_match: str | None, if_none_match: bool = False) -> dict[str, str]:
        if if_match and if_none_match:
            raise ValueError("give if_match (the item as you saw it) or if_none_match (it must not exist), not both")
        if if_none_match:
            return {"If-None-Match": "*"}
        return {"If-Match": if_match_header(if_match)} if if_match else {}

    @staticmethod
    def _fields(**kwargs: Any) -> dict[str, Any]:
        return {k: v for k, v in kwargs.items() if v is not None}

    # -- service ---------------------------------------------------------------

    def health(self) -> bool:
        """Whether ``/healthz`` answers ``{"ok": true}`` (liveness; no token needed)."""
        return bool((self._call("GET", "/healthz") or {}).get("ok"))

    def ready(self) -> dict[str, Any]:
        """``/readyz`` once, without retries: ``{"ready": bool, "remote": state, "disk": state}`` — ``ready`` is
        false (the host answered 503) while the data root's disk is full or read-only, or the remote, if any,
        does not answer (``details``, with paths, for an admin token only)."""
        try:
            return self._call("GET", "/readyz", retries=0)
        except ClientError as exc:
            if exc.status == 503 and "ready" in exc.body:
                return dict(exc.body)
            raise

    def version(self) -> dict[str, Any]:
        """``{"version": the host's wikimem version, "api": 1}``."""
        return self._call("GET", "/version")

    def openapi(self) -> dict[str, Any]:
        """The host's OpenAPI document (what this client's methods call, by ``operationId``)."""
        return self._call("GET", "/openapi.json")

    def replication(self) -> dict[str, Any]:
        """Replication ``mode`` (none, sync, async), ``remote`` and ``lag`` per owner (admin)."""
        return self._call("GET", "/replication")

    # -- owners ----------------------------------------------------------------

    def owners(self, *, prefix: str | None = None, limit: int = 50, cursor: str | None = None) -> Page:
        """A page of owners: dicts with ``id``, ``items``, ``files``, ``diary_days``, ``last_change``, ``head``
        (behind a cluster, ``extra["unreachable"]`` lists the hosts that did not answer)."""
        data = self._call("GET", "/owners", query={"prefix": prefix, "limit": str(limit), "cursor": cursor})
        return _page(data, "owners")

    def create_owner(self, owner: str | None = None) -> dict[str, Any]:
        """Create the owner (idempotent); ``{"owner": stats, "created": bool}``."""
        return self._call("PUT", self._owner_path(owner))

    def owner_stats(self, owner: str | None = None) -> dict[str, Any]:
        return self._call("GET", self._owner_path(owner))

    def delete_owner(self, owner: str | None = None) -> None:
        """Delete an owner and all its history (admin)."""
        self._call("DELETE", self._owner_path(owner), write=True, dedup=False)

    def export(self, *, owner: str | None = None, format: str = "zip", character: str | None = None) -> bytes:
        """An archive (``zip`` or ``tar``) of the owner's markdown (``character``: of that layer), or (``bundle``)
        its whole history as a git bundle (``git clone owner.bundle``)."""
        return self.request("GET", self._owner_path(owner) + "/export",
                            query={"format": format, "character": character}, raw=True)[0]

    # -- wiki ------------------------------------------------------------------

    def files(self, *, owner: str | None = None, character: str | None = None) -> list[str]:
        return self._call("GET", self._owner_path(owner) + "/files", query={"character": character})["files"]

    def items(self, file: str | None = None, *, owner: str | None = None,
              character: str | None = None) -> list[RecallItem]:
        data = self._call("GET", self._owner_path(owner) + "/items", query={"file": file, "character": character})
        return [recall_item(i) for i in data["items"]]

    def fetch(self, file: str, name: str, *, owner: str | None = None, character: str | None = None) -> Fetched:
        """One item with its etag; :class:`NotFoundError` if there is none."""
        data, headers = self.request("GET", self._item_path(owner, file, name), query={"character": character})
        return Fetched(recall_item(data["item"]), unquote_etag(headers.get("ETag")))

    def get(self, file: str, name: str, *, owner: str | None = None, character: str | None = None) -> RecallItem:
        """One item; :class:`NotFoundError` if there is none (unlike the library's ``None``:
        over HTTP an unknown owner is a 404 too, and must not pass for an empty memory)."""
        return self.fetch(file, name, owner=owner, character=character).item

    def add(self, file: str, name: str, content: str, *, owner: str | None = None, source_conv: str | None = None,
            ts: str | None = None, run: str | None = None, actor: str | None = None,
            if_match: str | None = None, if_none_match: bool = False, staged: bool = False,
            character: str | None = None) -> Written:
        """Add or update an item; ``if_match`` (an etag or commit id) refuses a lost update with 412,
        ``if_none_match=True`` adds it only if it does not exist yet (else 412, nothing written)."""
        body = self._fields(content=content, source_conv=source_conv, ts=ts, run=run, actor=actor,
                            staged=True if staged else None, character=character)
        data, headers = self.request("PUT", self._item_path(owner, file, name), body=body, write=True,
                                     headers=self._precondition(if_match, if_none_match))
        return Written(recall_item(data["item"]), data.get("commit"), bool(data.get("replayed")),
                       unquote_etag(headers.get("ETag")))

    def remove(self, file: str, name: str, *, owner: str | None = None, run: str | None = None,
               actor: str | None = None, if_match: str | None = None, staged: bool = False,
               character: str | None = None) -> Written:
        """Remove an item; :class:`NotFoundError` if there was none."""
        body = self._fields(run=run, actor=actor, staged=True if staged else None, character=character) or None
        data = self._call("DELETE", self._item_path(owner, file, name), body=body, write=True,
                          headers=self._precondition(if_match))
        return Written(bool(data.get("removed")), data.get("commit"), bool(data.get("replayed")))

    # -- diary -----------------------------------------------------------------

    def diary_append(self, content: str, *, owner: str | None = None, ts: str | None = None,
                     date: str | None = None, time: str | None = None, tz: str | None = None,
                     source_conv: str | None = None, run: str | None = None, actor: str | None = None,
                     staged: bool = False, character: str | None = None, channel: str | None = None,
                     present: Iterable[str] | None = None) -> Written:
        """Append one diary event (never twice, even when a retry follows a timeout); ``channel`` and ``present``:
        where it was said (``dm`` for a direct chat) and who was there (``["user:ann", "char:kai"]``)."""
        body = self._fields(content=content, ts=ts, date=date, time=time, tz=tz, source_conv=source_conv,
                            run=run, actor=actor, staged=True if staged else None, character=character,
                            channel=channel, present=_ids(present))
        data = self._call("POST", self._owner_path(owner) + "/diary", body=body, write=True)
        return Written(diary_item(data["entry"]), data.get("commit"), bool(data.get("replayed")))

    def diary_dates(self, *, owner: str | None = None, character: str | None = None) -> list[str]:
        return self._call("GET", self._owner_path(owner) + "/diary/dates", query={"character": character})["dates"]

    def diary_day(self, date: str, *, owner: str | None = None, character: str | None = None) -> list[DiaryItem]:
        data = self._call("GET", f"{self._owner_path(owner)}/diary/{_q(date)}", query={"character": character})
        return [diary_item(e) for e in data["entries"]]

    def diary_window(self, start: str, end: str, *, owner: str | None = None,
                     character: str | None = None) -> list[DiaryItem]:
        """Entries of the closed interval of local dates ``start``..``end``."""
        data = self._call("GET", self._owner_path(owner) + "/diary",
                          query={"start": start, "end": end, "character": character})
        return [diary_item(e) for e in data["entries"]]

    def diary_tool(self, arguments: Any, *, owner: str | None = None, ts: str | None = None,
                   date: str | None = None, time: str | None = None, tz: str | None = None,
                   source_conv: str | None = None, run: str | None = None, actor: str | None = None,
                   staged: bool = False, character: str | None = None, channel: str | None = None,
                   present: Iterable[str] | None = None) -> Written:
        """Handle an ``append_diary`` tool call; a bad call raises :class:`BadRequestError` whose
        ``message`` is written to be returned to the agent (``channel``, ``present``: as :meth:`diary_append`)."""
        body = self._fields(arguments=arguments, ts=ts, date=date, time=time, tz=tz, source_conv=source_conv,
                            run=run, actor=actor, staged=True if staged else None, character=character,
                            channel=channel, present=_ids(present))
        data = self._call("POST", self._owner_path(owner) + "/diary-tool", body=body, write=True)
        return Written(diary_item(data["entry"]), data.get("commit"), bool(data.get("replayed")))

    # -- batches, retrieval, memorize -------------------------------------------

    def batch(self, ops: Iterable[Mapping[str, Any]], *, owner: str | None = None, run: str | None = None,
              actor: str | None = None, message: str | None = None, source_conv: str | None = None,
              if_match: str | None = None, staged: bool = False, character: str | None = None) -> dict[str, Any]:
        """Several writes as one commit: ``{"results": [...], "commit": ..., "replayed": ...}``."""
        body = self._fields(ops=list(ops), run=run, actor=actor, message=message, source_conv=source_conv,
                            staged=True if staged else None, character=character)
        return self._call("POST", self._owner_path(owner) + "/batch", body=body, write=True,
                          headers=self._precondition(if_match))

    def retrieve(self, query: str | None = None, *, messages: Iterable[Mapping[str, Any]] | None = None,
                 messages_last: int | None = None, owner: str | None = None, limit: int = 10,
                 budget_tokens: int | None = None, budget_strict: bool = False, expand_links: bool = True,
                 explain: bool = False, time_range: tuple[str, str] | None = None, tz: str | None = None,
                 as_of: str | None = None, diary: str | None = None,
                 recency_half_life: float | None = None, include_staged: bool | None = None,
                 character: str | None = None, channel: str | None = None,
                 present: Iterable[str] | None = None) -> RetrievalResult:
        """``MemoryIndex.retrieve`` on the host.

        Give ``query``, or the chat so far as ``messages`` (``{"role", "content"}``
        dicts; the query is then its user turns, the last ``messages_last``):
        send the messages rather than a transcript pasted into ``query`` —
        the character's own words pull its earlier answers back
        (``bench/quality_chat.py``).
        ``budget_strict``: nothing over ``budget_tokens``, not even the first
        entry. ``diary``: ``"window"`` (diary entries only through a time
        window) or ``"all"`` (ranked with the wiki; ``recency_half_life`` in
        days favours recent ones); default: the host's. ``as_of`` (a commit
        id or ISO time) searches the past. ``character``: recall as that
        character (its layer, the shared layer and its profile, ranked as one;
        each entry's ``layer`` and ``character`` say where it comes from);
        default: the character the token is bound to, if any. ``channel`` and
        ``present``: where the answer will be read and who is there (owner
        ids, ``char:<id>``): the host leaves out what may not be recalled
        there (``excluded`` counts it with ``explain``).
        """
        if (query is None) == (messages is None):
            raise ValueError("give retrieve() either query or messages")
        body = self._fields(query=query, messages=None if messages is None else [dict(m) for m in messages],
                            messages_last=messages_last, limit=limit, budget_tokens=budget_tokens,
                            budget_strict=True if budget_strict else None, expand_links=expand_links,
                            explain=explain, time_range=list(time_range) if time_range else None, tz=tz,
                            as_of=as_of, diary=diary, recency_half_life=recency_half_life,
                            include_staged=include_staged, character=character, channel=channel,
                            present=None if present is None else list(present))
        return retrieval_result(self._call("POST", self._owner_path(owner) + "/retrieve", body=body))

    def memorize(self, turn: str, *, owner: str | None = None, character: str | None = None,
                 prompt: str | None = None, ts: str | None = None, tz: str | None = None,
                 source_conv: str | None = None, run: str | None = None, actor: str | None = None,
                 staged: bool = False) -> Memorized:
        """Run the host's LLM over one turn; what it keeps (diary entries and facts) is written as one run.

        ``character``: a registered character's id (default: the token's, else the owner's setting): the diary
        and facts go to its layer, the facts also to the shared layer by its policy (``proposal``). The request
        lasts as long as the model thinks; :meth:`memorize_async` answers at once.
        """
        body = self._fields(turn=turn, character=character, prompt=prompt, ts=ts, tz=tz, source_conv=source_conv,
                            run=run, actor=actor, staged=True if staged else None)
        data = self._call("POST", self._owner_path(owner) + "/memorize", body=body, write=True)
        return memorized(data)

    def memorize_async(self, turn: str, *, owner: str | None = None, character: str | None = None,
                       prompt: str | None = None, ts: str | None = None, tz: str | None = None,
                       source_conv: str | None = None, run: str | None = None, actor: str | None = None,
                       key: str | None = None, staged: bool = False) -> dict[str, Any]:
        """Memorize as a background job (``Prefer: respond-async``): the job, at once (``id``,
        ``state``, ``params.run``); follow it with :meth:`job` or :meth:`wait_job`. ``key`` is the
        Idempotency-Key (default: a new one, the same on every retry): the same key is the same job."""
        body = self._fields(turn=turn, character=character, prompt=prompt, ts=ts, tz=tz, source_conv=source_conv,
                            run=run, actor=actor, staged=True if staged else None)
        headers = {"Prefer": "respond-async", **({"Idempotency-Key": key} if key else {})}
        return self._call("POST", self._owner_path(owner) + "/memorize", body=body, write=True, headers=headers)

    def job(self, job_id: str) -> dict[str, Any]:
        """A background job: ``state`` (queued, running, done, failed, cancelled), ``done``/``total``,
        ``results``."""
        return self._call("GET", f"/jobs/{_q(job_id)}")

    def jobs(self, *, kind: str | None = None, state: str | None = None, owner_prefix: str | None = None,
             since: str | None = None, limit: int = 50, cursor: str | None = None) -> Page:
        """Background jobs the token may see, newest first (``GET /jobs``): entries are dicts with ``id``,
        ``kind``, ``state``, ``done``/``total``, ``owner`` (one owner's job) or ``scope`` (a bulk job's owner
        prefix); bulk jobs only with the admin scope."""
        data = self._call("GET", "/jobs", query={"kind": kind, "state": state, "owner_prefix": owner_prefix,
                                                  "since": since, "limit": str(limit), "cursor": cursor})
        return _page(data, "jobs")

    def cancel_job(self, job_id: str) -> dict[str, Any]:
        """Cancel a job none of whose steps has started: the job, ``state`` ``cancelled`` (a
        :class:`~wikimem.errors.Conflict` once it runs)."""
        return self._call("POST", f"/jobs/{_q(job_id)}/cancel", write=True)

    def wait_job(self, job: str | Mapping[str, Any], *, timeout: float = 120.0, poll: float = 0.5) -> dict[str, Any]:
        """Poll a job until it is done, failed or cancelled (``TimeoutError`` after ``timeout`` seconds)."""
        job_id = job if isinstance(job, str) else job["id"]
        deadline = time.monotonic() + timeout
        while True:
            found = self.job(job_id)
            if found.get("state") in ("done", "failed", "cancelled"):
                return found
            if time.monotonic() >= deadline:
                raise TimeoutError(f"job {job_id} still {found.get('state')} after {timeout:g} s")
            self.session.sleep(poll)

    # -- erasure (admin) ------------------------------------------------------------

    def erase_owner(self, owner: str | None = None, *, confirm: str | None = None,
                    actor: str | None = None) -> dict[str, Any]:
        """Erase the owner everywhere — repository, history, remote, indexes, jobs — as a background job: the
        job, at once; :meth:`wait_job` gives its receipt as the step's result. ``confirm`` repeats the owner id
        (default: the owner named). Asking again is the same job."""
        owner = owner or self.owner
        body = self._fields(confirm=confirm if confirm is not None else owner, actor=actor)
        return self._call("POST", self._owner_path(owner) + "/erase", body=body, write=True)

    def forget(self, file: str | None = None, name: str | None = None, *, date: str | None = None,
               time: str | None = None, index: int | None = None, owner: str | None = None,
               actor: str | None = None) -> dict[str, Any]:
        """Forget one wiki item (``file``, ``name``) or diary entry (``date``, ``time``, and ``index`` when
        several share the minute) with its history, as a background job (see :meth:`erase_owner`)."""
        body = self._fields(file=file, name=name, date=date, time=time, index=index, actor=actor)
        return self._call("POST", self._owner_path(owner) + "/forget", body=body, write=True)

    def erasure(self, owner: str | None = None) -> dict[str, Any]:
        """The receipt of the owner's erasure (``NotFound`` when it was not erased)."""
        owner = owner or self.owner
        if not owner:
            raise ValueError("no owner: pass owner= to the call or to Client(...)")
        return self._call("GET", "/erasures", query={"owner": owner})

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
                run: str | None = None, actor: str | None = None, action: str | None = None,
                since: str | None = None, until: str | None = None, limit: int = 50, cursor: str | None = None,
                after: str | None = None, at: str | None = None, character: str | None = None,
                channel: str | None = None) -> Page:
        """Commits newest first (dicts with ``id``, ``time``, ``actor``, ``run``, ``action``, ``summary``,
        ``layers``, …) of the shared layer, or of ``character``'s layer.

        Filters: ``file``, ``item``, ``run``, ``actor``, ``action`` (``add``,
        ``diary``, ``batch``, ``rollback``, …), ``since`` / ``until`` (a date,
        a whole UTC day, or an ISO time), ``channel`` (commits that wrote or
        removed a diary entry said there). Paging: ``cursor=page.next`` for
        older commits, ``after=page.prev`` for newer ones, ``at`` (a date or
        time) to start there. ``page.extra["reverted_by"]`` maps a commit id
        to the commits that undid it.
        """
        data = self._call("GET", self._owner_path(owner) + "/history",
                          query={"file": file, "item": item, "run": run, "actor": actor, "action": action,
                                 "since": since, "until": until, "limit": str(limit), "cursor": cursor,
                                 "after": after, "at": at, "character": character, "channel": channel})
        return _page(data, "entries")

    def commit(self, id: str, *, owner: str | None = None, character: str | None = None) -> dict[str, Any]:
        """One commit: ``entry``, per-item ``changes`` (before / after) and the text ``patch`` (of the shared layer,
        or of ``character``'s)."""
        return self._call("GET", f"{self._owner_path(owner)}/commits/{_q(id)}", query={"character": character})

    def diff(self, from_: str, to: str = "HEAD", *, owner: str | None = None,
             character: str | None = None) -> dict[str, Any]:
        """Per-item changes between two points (commit ids, ``HEAD~N`` or ISO times) in one layer."""
        return self._call("GET", self._owner_path(owner) + "/diff",
                          query={"from": from_, "to": to, "character": character})

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

    # -- across owners (operators) ------------------------------------------------

    def runs(self, *, run: str | None = None, actor: str | None = None, source_conv: str | None = None,
             action: str | None = None, since: str | None = None, until: str | None = None,
             owner_prefix: str | None = None, by: str | None = None, limit: int = 50,
             cursor: str | None = None, character: str | None = None) -> Page:
        """Runs across the owners the token reaches, newest last commit first (``GET /runs``).

        Entries are dicts with ``owner``, ``run``, ``actor``, ``commits``,
        ``first``, ``last``, ``rolled_back_by``, …; ``page.extra`` has
        ``total`` and ``complete``. ``by="owner"``: one entry per owner
        (``owner``, ``runs``, ``commits``) instead. Not limited to the
        client's ``owner``: narrow with ``owner_prefix``; ``character``: the
        runs that wrote that character's layer.
        """
        data = self._call("GET", "/runs", query={
            "run": run, "actor": actor, "source_conv": source_conv, "action": action, "since": since,
            "until": until, "owner_prefix": owner_prefix, "by": by, "limit": str(limit), "cursor": cursor,
            "character": character})
        return _page(data, "owners" if by == "owner" else "runs")

    def bulk_rollback(self, *, run: str | None = None, actor: str | None = None, source_conv: str | None = None,
                      action: str | None = None, since: str | None = None, until: str | None = None,
                      owner_prefix: str | None = None, force: bool = False, key: str | None = None,
                      character: str | None = None) -> dict[str, Any]:
        """Roll back every matching run, one commit per owner, as a background job (admin): the job, at
        once; follow it with :meth:`wait_job`. Owners with later edits are skipped (a conflict) unless
        ``force``. The selection needs more than ``owner_prefix``; ``character`` selects the runs that wrote that
        character's layer. ``key`` is the Idempotency-Key (default:
        a new one per call, the same on every retry): the same key is the same job."""
        body = self._fields(run=run, actor=actor, source_conv=source_conv, action=action, since=since, until=until,
                            owner_prefix=owner_prefix, force=True if force else None, character=character)
        return self._call("POST", "/bulk/rollback", body=body, write=True,
                          headers={"Idempotency-Key": key} if key else None)

    def preview_bulk_rollback(self, *, run: str | None = None, actor: str | None = None,
                              source_conv: str | None = None, action: str | None = None, since: str | None = None,
                              until: str | None = None, owner_prefix: str | None = None, limit: int | None = None,
                              cursor: str | None = None, character: str | None = None) -> dict[str, Any]:
        """What :meth:`bulk_rollback` would do, writing nothing: ``selection``, ``total`` (owners, runs,
        changes, conflicts, …) and a page of ``owners`` (each one's ``changes`` and ``conflicts``; ``next``
        is the ``cursor`` of the following page)."""
        body = self._fields(run=run, actor=actor, source_conv=source_conv, action=action, since=since, until=until,
                            owner_prefix=owner_prefix, limit=limit, cursor=cursor, preview=True, character=character)
        return self._call("POST", "/bulk/rollback", body=body)

    # -- runs on probation ------------------------------------------------------------

    def staged_runs(self, *, state: str | None = None, run: str | None = None, actor: str | None = None,
                    owner_prefix: str | None = None) -> dict[str, Any]:
        """Staged runs across the owners the token reaches, oldest first (``GET /staged``): ``runs`` (one line
        per run: actor, owners, first, last, age, size, held), ``waiting`` (how many, the oldest's age) and the
        host's ``policy``. ``state``: ``staged`` (default), ``approved``, ``discarded``, ``expired``."""
        return self._call("GET", "/staged", query={"state": state, "run": run, "actor": actor,
                                                   "owner_prefix": owner_prefix})

    def staged_run(self, run: str, *, state: str | None = None) -> list[dict[str, Any]]:
        """Every owner's copy of a staged run, staged or settled (``GET /staged/<run>``)."""
        return list(self._call("GET", f"/staged/{_q(run)}", query={"state": state})["owners"])

    def approve_staged_run(self, run: str, *, owners: list[str] | None = None,
                           except_owners: list[str] | None = None, force: bool = False, preview: bool = False,
                           key: str | None = None) -> dict[str, Any]:
        """Approve a staged run on every owner holding it (or ``owners``, less ``except_owners``) as a job
        (admin): the job at once (follow it with :meth:`wait_job`); with ``preview`` each owner's plan and
        conflicts, nothing written. Items ``main`` changed since are skipped unless ``force``."""
        body = self._fields(owners=owners, except_owners=except_owners, force=True if force else None,
                            preview=True if preview else None)
        return self._call("POST", f"/staged/{_q(run)}/approve", body=body, write=not preview,
                          headers={"Idempotency-Key": key} if key else None)

    def discard_staged_run(self, run: str, *, owners: list[str] | None = None,
                           except_owners: list[str] | None = None, key: str | None = None) -> dict[str, Any]:
        """Discard a staged run on every owner holding it (or ``owners``, less ``except_owners``) as a job
        (admin): the job at once."""
        body = self._fields(owners=owners, except_owners=except_owners)
        return self._call("POST", f"/staged/{_q(run)}/discard", body=body, write=True,
                          headers={"Idempotency-Key": key} if key else None)

    def hold_staged_run(self, run: str, held: bool = True, *, owners: list[str] | None = None) -> dict[str, Any]:
        """Keep a staged run from auto-approval and expiry (``held=False`` lets it go again) (admin)."""
        return self._call("POST", f"/staged/{_q(run)}/hold",
                          body=self._fields(held=held, owners=owners))

    def owner_staged(self, *, owner: str | None = None) -> list[dict[str, Any]]:
        """The owner's staged runs, oldest first (tip, base, actor, times, commits, changes)."""
        return list(self._call("GET", f"{self._owner_path(owner)}/staged")["runs"])

    def staged_review(self, run: str, *, owner: str | None = None) -> dict[str, Any]:
        """One owner's staged run against current ``main``: ``staged`` (what it changed), ``changes`` (what
        approving would change now) and ``conflicts``."""
        return self._call("GET", f"{self._owner_path(owner)}/staged/{_q(run)}")

    def approve_staged(self, run: str, *, owner: str | None = None, force: bool = False,
                       edits: list[dict[str, Any]] | None = None, actor: str | None = None) -> dict[str, Any]:
        """Approve one owner's staged run onto ``main`` as one commit (admin); ``edits`` change what is approved
        (``{file, name, content}`` or ``{date, time, before?, content}``). ``result`` says what changed and what
        was skipped."""
        body = self._fields(force=True if force else None, edits=edits, actor=actor)
        return self._call("POST", f"{self._owner_path(owner)}/staged/{_q(run)}/approve", body=body,
                          write=True)

    def discard_staged(self, run: str, *, owner: str | None = None, actor: str | None = None) -> dict[str, Any]:
        """Discard one owner's staged run (admin): its branch goes, a commit on ``main`` records it."""
        return self._call("POST", f"{self._owner_path(owner)}/staged/{_q(run)}/discard",
                          body=self._fields(actor=actor), write=True)

    # -- the character registry --------------------------------------------------------

    def characters(self, *, deleted: bool = False) -> list[dict[str, Any]]:
        """The registered characters by id (``deleted``: the deleted ones too)."""
        return list(self._call("GET", "/characters", query={"deleted": "true" if deleted else None})["characters"])

    def character(self, character: str) -> dict[str, Any]:
        """One character: ``id``, ``name``, ``persona``, ``shared_writes``, ``deleted``, ``updated``, ``head``."""
        return self._call("GET", f"/characters/{_q(character)}")["character"]

    def put_character(self, character: str, name: str, *, persona: str | None = None,
                      shared_writes: str | None = None, actor: str | None = None) -> Written:
        """Register or change a character (admin): one commit in its owner ``char:<id>``; the value is the
        character (the commit None when nothing changed)."""
        body = {"name": name, **self._fields(persona=persona, shared_writes=shared_writes, actor=actor)}
        data = self._call("PUT", f"/characters/{_q(character)}", body=body, write=True)
        return Written(data["character"], data.get("commit"), False)

    def delete_character(self, character: str) -> Written:
        """Mark a character deleted (admin): it can no longer write; its layers stay until erased or forgotten."""
        data = self._call("DELETE", f"/characters/{_q(character)}", write=True)
        return Written(data["character"], data.get("commit"), False)

    # -- imports (SillyTavern cards and chats, portable persons, lorebooks) -------------------------------

    def import_card(self, file: bytes | Mapping[str, Any], *, character: str | None = None,
                    shared_writes: str | None = None, preview: bool = False, run: str | None = None) -> dict[str, Any]:
        """Import a character card (admin): ``file`` is the card (a dict) or its file's bytes (JSON or PNG). The
        answer: what changed (``preview=True``: what would, under ``preview``), the commit and run."""
        card = {"card": dict(file)} if isinstance(file, Mapping) else {"file": base64.b64encode(file).decode()}
        body = {**card, **self._fields(character=character, shared_writes=shared_writes, run=run,
                                       preview=True if preview else None)}
        return self._call("POST", "/characters/import", body=body, write=not preview)

    def character_card(self, character: str) -> dict[str, Any]:
        """The card a character was imported from, as its profile holds it (its lorebook included)."""
        return self._call("GET", f"/characters/{_q(character)}/card")

    def import_chat(self, chat: bytes | str, character: str, *, owner: str | None = None, tz: str | None = None,
                    preview: bool = False, transcript: bool = False, run: str | None = None,
                    key: str | None = None) -> dict[str, Any]:
        """Import a SillyTavern chat (JSONL) into ``character``'s layer of the owner: ``preview`` (turns, days,
        estimated tokens), else a job memorizing it as one run (``job``, ``run``; :meth:`wait_job`), or with
        ``transcript`` a conversation file (one commit, no model). ``key``: the Idempotency-Key."""
        text = chat.decode("utf-8") if isinstance(chat, bytes) else chat
        body = {"chat": text, "character": character, **self._fields(
            tz=tz, run=run, preview=True if preview else None, transcript=True if transcript else None)}
        return self._call("POST", self._owner_path(owner) + "/import/chat", body=body, write=not preview,
                          headers={"Idempotency-Key": key} if key else None)

    def import_rollback(self, run: str, *, owner: str | None = None) -> dict[str, Any]:
        """Undo an import's run on the owner (admin): its commits rolled back, its proposal discarded."""
        return self._call("POST", self._owner_path(owner) + "/import/rollback", body={"run": run}, write=True)

    def import_person(self, data: bytes, *, owner: str | None = None, replace: bool = False) -> dict[str, Any]:
        """Make the owner from a person's portable file (admin; :meth:`export` with ``format="bundle"``);
        ``replace``: in place of the person of that id here."""
        return self._call("POST", self._owner_path(owner) + "/import/person", body=bytes(data),
                          query={"replace": "true" if replace else None})["person"]

    def lorebook(self, character: str | None = None, *, owner: str | None = None, shared: bool = False,
                 format: str = "worldinfo") -> Any:
        """What ``character`` knows of the owner as a SillyTavern World Info book (a dict), or ``format=
        "databank"``: a Data Bank markdown text; ``shared``: with the shared layer."""
        query = {"character": character, "shared": "true" if shared else None, "format": format}
        if format == "databank":
            return self.request("GET", self._owner_path(owner) + "/lorebook", query=query, raw=True)[0].decode()
        return self._call("GET", self._owner_path(owner) + "/lorebook", query=query)


def _page(data: Mapping[str, Any], key: str) -> Page:
    """A :class:`Page` of a listing's answer: its entries under ``key``, ``next``, ``prev``, the rest in ``extra``."""
    extra = {k: v for k, v in data.items() if k not in (key, "next", "prev")}
    return Page(list(data[key]), data.get("next"), data.get("prev"), extra)


def _ids(present: Iterable[str] | None) -> list[str] | None:
    """``present`` as the API takes it: a JSON list (one string of ids separated by commas is split)."""
    if present is None:
        return None
    if isinstance(present, str):
        return [one.strip() for one in present.split(",") if one.strip()]
    return list(present)
