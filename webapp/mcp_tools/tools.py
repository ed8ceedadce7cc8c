"""The MCP server of the host: an owner's memory as five tools, on the official ``mcp`` SDK.

Design notes: docs/explanation/mcp.md (``webapp/mcp_tools/tools.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Annotated, Any, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

import wikimem
from webapp.auth import Principal, allowed
from webapp.errors import error_body, error_status
from webapp.params import etag_value
from wikimem.host import Act, Ask, Host, Owner, validate_owner_id
from wikimem.host import Caller as Asker
from wikimem.limits import MAX_CONTENT_CHARS, MAX_QUERY_CHARS, MAX_RETRIEVE_LIMIT, MAX_TURN_CHARS
from wikimem.naming import MAX_OWNER_ID_LEN, MAX_PRESENT

__all__ = ["CALLER", "Caller", "build_server", "TOOLS"]

CALLER = "wikimem.caller"  # the key of the ASGI scope that carries who calls

TOOLS = ("retrieve", "diary_append", "put_item", "memorize", "history")

OwnerId = Annotated[str, Field(description="the owner id, e.g. user:ann", min_length=1, max_length=128)]
Text = Annotated[str | None, Field(max_length=200)]
When = Annotated[str | None, Field(max_length=64)]
Key = Annotated[str | None, Field(max_length=200, description="a retry with the same key writes nothing again")]
CharacterId = Annotated[str | None, Field(max_length=64, description="a registered character's id: its own layer "
                                          "of the owner's memory (default: the shared layer, or the character the "
                                          "token is bound to)")]
ChannelId = Annotated[str | None, Field(max_length=MAX_OWNER_ID_LEN, description="where it was said: a channel id "
                                        "(a group chat, e.g. discord:1234), or dm for a direct chat")]
Present = Annotated[list[str] | None, Field(max_length=MAX_PRESENT, description="who was there: persons' owner ids "
                                            "and characters as char:<id>, e.g. [\"user:ann\", \"char:kai\"]")]

_INSTRUCTIONS = """Long-term memory of the people you talk with, one owner (e.g. user:ann) each: a wiki of
facts (files of named items) and a diary of dated events. Call retrieve before you answer, with the user's
message as query, and put its prompt text into your context. Record events with diary_append (date and time
default to now in the owner's time zone) and lasting facts with put_item; memorize lets the host's model
pick the diary entries of a whole turn. Every write is a git commit: history lists them."""


@dataclass(frozen=True)
class Caller:
    """Who calls a tool: the principal of the request's bearer token, and the host it reaches."""

    principal: Principal
    host: Host


def _caller(ctx: Context) -> Caller:
    request = ctx.request_context.request
    caller = request.scope.get(CALLER) if request is not None else None
    if not isinstance(caller, Caller):  # only the /mcp view serves these tools, and it always sets one
        raise ToolError("no caller: the tools are served at /mcp with a bearer token")
    return caller


def _owner(ctx: Context, owner_id: str, scope: str) -> tuple[Owner, Principal]:
    """The owner a tool names, after the token's scope and prefix are checked (as ``owner_for`` does)."""
    caller = _caller(ctx)
    allowed(caller.principal, scope, owner_id)
    validate_owner_id(owner_id)
    return caller.host.owner(owner_id), caller.principal


def _asker(principal: Principal) -> Asker:
    """Who calls, as the host's gate knows callers."""
    return Asker.token(principal.name, principal.tenant, principal.character)


def _act(ctx: Context, mem: Owner, principal: Principal, action: str, ask: Ask, **target: Any) -> Act:
    """The tool's change through the host's gate (as the API's views make theirs): its write context, the staging
    policy of the token, its audit event."""
    return _caller(ctx).host.gate.act(_asker(principal), action, mem, ask, **target)


@contextmanager
def _answered() -> Iterator[None]:
    """The library's refusals as the tool's error result (the API's error document); crashes go on up."""
    try:
        yield
    except ToolError:
        raise
    except Exception as exc:
        status = error_status(exc)
        if status == 500:
            raise
        raise ToolError(json.dumps({"status": status, **error_body(exc, status)["error"]}, ensure_ascii=False,
                                   default=str)) from None


def retrieve(owner: OwnerId,
             query: Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS,
                                         description="what to recall: usually the user's latest message")],
             ctx: Context,
             limit: Annotated[int, Field(ge=1, le=MAX_RETRIEVE_LIMIT)] = 10,
             budget_tokens: Annotated[int | None, Field(ge=1, description="the prompt text fits this")] = None,
             diary: Literal["window", "all"] | None = None,
             tz: When = None,
             as_of: When = None,
             include_staged: Annotated[bool | None, Field(description="also the owner's staged runs (runs on "
                                                          "probation); each hit says whether it is staged")] = None,
             character: CharacterId = None,
             channel: Annotated[str | None, Field(max_length=128, description="where the answer will be read: "
                                                  "dm for a direct chat, else a group's channel id")] = None,
             present: Annotated[list[str] | None, Field(max_length=MAX_PRESENT, description="who is in the room "
                                                        "now: owner ids and char:<character>")] = None,
             ) -> dict[str, Any]:
    """The memories that belong in the prompt: `prompt` is them as text (within budget_tokens), `result`
    the hits with their evidence. diary: "all" ranks diary entries with the wiki, "window" (default) reads
    the diary only when the query names a time ("last Wednesday"). channel/present: what was said in a direct
    chat is left out when others are in the room; a character recalls only the channel events it was at."""
    with _answered():
        mem, principal = _owner(ctx, owner, "read")
        if include_staged is None:
            include_staged = _caller(ctx).host.probation.policy.reads_staged(principal.name)
        recall_as = _caller(ctx).host.gate.recalls_as(_asker(principal), character)
        result = mem.retrieve(query, limit=limit, budget_tokens=budget_tokens, diary=diary, tz=tz, as_of=as_of,
                              include_staged=bool(include_staged) and as_of is None, character=recall_as,
                              channel=channel, present=present)
        return {"prompt": result.to_prompt(), "result": result.to_dict()}


def diary_append(owner: OwnerId,
                 content: Annotated[str, Field(min_length=1, max_length=MAX_CONTENT_CHARS,
                                               description="what happened, 2 to 4 sentences")],
                 ctx: Context,
                 date: Annotated[str | None, Field(description="YYYY-MM-DD; default: today")] = None,
                 time: Annotated[str | None, Field(description="HH:MM; default: now")] = None,
                 tz: When = None, ts: When = None, source_conv: Text = None, run: Text = None,
                 actor: Text = None, idempotency_key: Key = None, character: CharacterId = None,
                 channel: ChannelId = None, present: Present = None,
                 planned: Annotated[bool, Field(description="true to file an event after today (a plan)")] = False,
                 ) -> dict[str, Any]:
    """Append one event to the owner's diary (one commit; with character, to its layer); channel and present:
    where it was said and who was there; a date after today only with planned."""
    with _answered():
        mem, principal = _owner(ctx, owner, "write")
        ask = Ask(run=run, actor=actor, source_conv=source_conv, idempotency_key=idempotency_key, layer=character)
        room = {k: v for k, v in (("channel", channel), ("present", present)) if v is not None}
        with _act(ctx, mem, principal, "diary-append", ask) as act:
            done = mem.diary_append(content, ctx=act.ctx, character=act.layer, ts=ts, date=date, time=time, tz=tz,
                                    planned=planned, **room)
            act.done(done.commit)
        return {"entry": asdict(done.value), "commit": done.commit, "replayed": bool(done.replayed)}


def put_item(owner: OwnerId,
             file: Annotated[str, Field(description="the wiki file: lowercase letters, digits, - and _")],
             name: Annotated[str, Field(description="the item's name within the file")],
             content: Annotated[str, Field(min_length=1, max_length=MAX_CONTENT_CHARS)],
             ctx: Context,
             ts: When = None, source_conv: Text = None, run: Text = None, actor: Text = None,
             if_match: Annotated[str | None, Field(max_length=130, description="the etag the item must still "
                                                   "have (a lost update is refused)")] = None,
             if_none_match: Annotated[bool, Field(description="create only: refused if the item exists")] = False,
             idempotency_key: Key = None, character: CharacterId = None) -> dict[str, Any]:
    """Add or replace one wiki item (one commit); `created` says whether it is new, `etag` is what
    if_match takes next time."""
    with _answered():
        mem, principal = _owner(ctx, owner, "write")
        ask = Ask(run=run, actor=actor, source_conv=source_conv, idempotency_key=idempotency_key,
                  if_match=etag_value(if_match), if_none_match=if_none_match, layer=character)
        with _act(ctx, mem, principal, "edit", ask, file=file, name=name) as act:
            done = mem.add(file, name, content, ts=ts, ctx=act.ctx, character=act.layer)
            act.done(done.commit)
        return {"item": asdict(done.value), "commit": done.commit, "replayed": bool(done.replayed),
                "created": bool(done.created), "etag": mem.etag(done.value)}


def memorize(owner: OwnerId,
             turn: Annotated[str, Field(min_length=1, max_length=MAX_TURN_CHARS,
                                        description="the conversation turn, e.g. 'user: …\\nassistant: …'")],
             ctx: Context,
             character: Annotated[str | None, Field(max_length=200, description="memorize as this registered "
                                                    "character (its layer; its facts proposed to the shared one); "
                                                    "default: the token's character, or the owner's setting")] = None,
             ts: When = None, tz: When = None, source_conv: Text = None, run: Text = None, actor: Text = None,
             idempotency_key: Key = None, channel: ChannelId = None, present: Present = None) -> dict[str, Any]:
    """Let the host's model write the diary entries and facts of one turn, as one run (channel and present: where
    the turn was said and who was there, on every diary entry)."""
    with _answered():
        mem, principal = _owner(ctx, owner, "write")
        host = _caller(ctx).host
        character = host.characters.resolve(character).id if character is not None else principal.character
        ask = Ask(run=run, actor=actor, source_conv=source_conv, idempotency_key=idempotency_key, layer=character)
        when: dict[str, Any] = {k: v for k, v in (("ts", ts), ("tz", tz), ("channel", channel), ("present", present))
                                if v is not None}
        with _act(ctx, mem, principal, "memorize", ask) as act:
            result = mem.memorize(turn, character=character, ctx=act.ctx, **when)
            act.done(result.commit, run=result.run)
        return result.to_dict()


def history(owner: OwnerId, ctx: Context,
            file: Text = None, item: Text = None, run: Text = None, actor: Text = None, action: Text = None,
            since: Annotated[str | None, Field(max_length=64, description="a date or ISO time (UTC)")] = None,
            until: Annotated[str | None, Field(max_length=64, description="a date or ISO time (UTC)")] = None,
            limit: Annotated[int, Field(ge=1, le=500)] = 50,
            cursor: Annotated[str | None, Field(max_length=200, description="next of the page before")] = None,
            character: CharacterId = None, channel: ChannelId = None,
            ) -> dict[str, Any]:
    """The owner's commits, newest first, with filters (channel: the commits that added or removed a diary entry
    said there); page on with cursor=next."""
    with _answered():
        mem, principal = _owner(ctx, owner, "read")
        layer = _caller(ctx).host.gate.layer(_asker(principal), character)
        page = mem.review.search_history(file=file, item=item, run=run, actor=actor, action=action, since=since,
                                         until=until, limit=limit, cursor=cursor, layers=(layer,), channel=channel)
        return {"entries": [e.to_dict() for e in page.entries], "next": page.next, "prev": page.prev,
                "reverted_by": mem.review.undone_by(page.entries)}


_READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
_APPEND = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
_REPLACE = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)


def build_server() -> MCPServer:
    """A new MCP server with the five tools (each process makes one: its session manager runs once)."""
    server: MCPServer = MCPServer("wikimem", instructions=_INSTRUCTIONS, version=wikimem.__version__)
    for fn, hints in ((retrieve, _READ), (diary_append, _APPEND), (put_item, _REPLACE), (memorize, _APPEND),
                      (history, _READ)):
        server.add_tool(fn, annotations=hints, structured_output=True)
    return server
