"""The one door of every change an edge asks for: the API, the MCP tools, the admin UI, the CLI and the jobs.

:meth:`Gate.act` turns who asks (:class:`Caller`), what the request says
(:class:`Ask`) and the owner into an :class:`Act`: the write context (the
actor default, the staging policy), the tenant of the jobs it submits, and
exactly one audit event when it is over (``ok``, ``refused`` or ``failed``).
No edge builds a :class:`~wikimem.context.WriteContext` or logs an audit
event itself (``tests/unit/test_architecture.py``); a job rebuilds the
context its submission was given with :func:`job_context`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any

from wikimem.context import WriteContext
from wikimem.errors import DamagedFolder, NotPermitted, RemoteError, StoreBusy, WikimemError
from wikimem.naming import validate_character_id

from .auditlog import audit

if TYPE_CHECKING:
    from .owner import Owner
    from .probation import StagingPolicy

__all__ = ["Caller", "Ask", "Act", "Gate", "job_context", "outcome_of"]

# The fields of a write context a job keeps in its parameters (and rebuilds with job_context).
JOB_CONTEXT_FIELDS = ("run", "actor", "source_conv", "idempotency_key", "fingerprint", "staged")
# Targets an event never names: what was forgotten is named by its file or day, never by its item.
_UNNAMED = {"forget": ("name", "item")}


@dataclass(frozen=True)
class Caller:
    """Who asks for a change: a bearer ``token``, a signed-in ``operator``, the command line (``cli``), a ``job``.

    ``name`` is the actor of its writes unless the request names another; ``prefix`` the owners it reaches
    (the tenant of the jobs it submits).
    """

    kind: str
    name: str
    prefix: str = ""
    character: str | None = None  # a token bound to a character (SPEC §11): its own layer, proposals to the shared

    @classmethod
    def token(cls, name: str, prefix: str = "", character: str | None = None) -> Caller:
        return cls("token", name, prefix, character)

    @classmethod
    def operator(cls, name: str, prefix: str = "") -> Caller:
        return cls("operator", name, prefix)

    @classmethod
    def cli(cls, name: str | None = None) -> Caller:
        return cls("cli", name or "wikimem")


@dataclass(frozen=True)
class Ask:
    """What a write request says of itself (its body's provenance, its headers' preconditions)."""

    run: str | None = None
    actor: str | None = None
    source_conv: str | None = None
    idempotency_key: str | None = None
    if_match: str | None = None
    if_none_match: bool = False
    staged: bool | None = None  # None: as the policy says
    layer: str | None = None  # the character's layer it addresses (None: the shared layer)


def outcome_of(exc: BaseException | None) -> str:
    """The result of an act that raised ``exc``: ``refused`` (the request's fault) or ``failed`` (the host's)."""
    if exc is None:
        return "ok"
    if isinstance(exc, (RemoteError, StoreBusy, DamagedFolder)):
        return "failed"
    return "refused" if isinstance(exc, (WikimemError, ValueError, LookupError, PermissionError)) else "failed"


@dataclass
class Act:
    """One change in progress (use it as a ``with`` block): its context, its owner, its audit event at the end."""

    gate: Gate = field(repr=False)
    caller: Caller
    action: str
    owner_id: str | None
    ctx: WriteContext
    target: dict[str, Any] = field(default_factory=dict)
    held: Owner | None = field(default=None, repr=False)  # the owner, once looked up
    layer: str | None = None  # the character's layer the change addresses (None: the shared layer)
    result: str | None = None  # set by refused(): the block answered a refusal without raising
    made: dict[str, Any] = field(default_factory=dict)  # what the change made, for its event (done())

    @property
    def owner(self) -> Owner:
        """The owner the change is made to (looked up once)."""
        if self.held is None:
            if self.owner_id is None or self.gate.lookup is None:
                raise ValueError(f"{self.action} names no owner this gate can look up")
            self.held = self.gate.lookup(self.owner_id)
        return self.held

    @property
    def tenant(self) -> str:
        """Whose quota the jobs this act submits count against: the caller's owner prefix."""
        return self.caller.prefix

    def job_params(self) -> dict[str, Any]:
        """The context as a job keeps it (:func:`job_context` makes it again in the job's process)."""
        return {k: getattr(self.ctx, k) for k in JOB_CONTEXT_FIELDS if getattr(self.ctx, k)}

    def write(self, verb: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``verb(*args, ctx=self.ctx, **kwargs)``, its commit told to the event (a ``Committed`` or a result
        with ``commit``); what it returned."""
        done = verb(*args, ctx=self.ctx, **kwargs)
        self.done(getattr(done, "commit", None))
        return done

    def done(self, commit: str | None = None, **fields: Any) -> None:
        """What the change made, for its audit event (the commit; a job id; counts)."""
        if commit:
            self.made["new_commit"] = commit
        self.made.update({k: v for k, v in fields.items() if v is not None})

    def refused(self, error: str | None = None) -> None:
        """The block answered a refusal without raising (a form shown again with its error)."""
        self.result = "refused"
        if error:
            self.made["error"] = error

    def __enter__(self) -> Act:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc is not None and not isinstance(exc, Exception):
            return  # an interrupt: nothing was decided
        result = outcome_of(exc) if exc is not None else (self.result or "ok")
        if exc is not None:
            self.made.setdefault("error", getattr(exc, "code", None) or type(exc).__name__)
        self.gate.record(self, result)


class Gate:
    """The host's door for changes (held as ``host.gate``); see the module's docstring."""

    def __init__(self, lookup: Callable[[str], Owner] | None = None,
                 policy: Callable[[], StagingPolicy] | None = None, digest: Callable[[str], str] | None = None,
                 shared_writes: Callable[[str], str] | None = None):
        """A host's gate (``lookup`` its owners, ``policy`` its staging policy, ``digest`` its erasures' keyed
        digest, ``shared_writes`` a character's policy for the shared layer: ``staged``, ``direct`` or ``none``);
        ``Gate()`` is the gate of a memory folder the command line opens without a host."""
        self.lookup = lookup
        self._policy = policy
        self._digest = digest  # an erasure's event names its owner by a keyed digest (as its receipt does)
        self._shared_writes = shared_writes

    def layer(self, caller: Caller, asked: str | None) -> str | None:
        """The layer a call of ``caller`` may address when it asks for ``asked`` (None: the shared layer): a malformed
        id is :class:`~wikimem.errors.InvalidName`; a character's token reaching another character's layer is
        :class:`~wikimem.errors.NotPermitted`."""
        if asked is not None:
            validate_character_id(asked)
        if caller.character is not None and asked not in (None, caller.character):
            raise NotPermitted(f"this token is bound to the character {caller.character!r}: it reads and writes the "
                               f"shared layer and its own, never {asked!r}'s layer")
        return asked

    def recalls_as(self, caller: Caller, asked: str | None) -> str | None:
        """The character a retrieve recalls as: the one asked for, else the one a token is bound to."""
        return self.layer(caller, asked) or caller.character

    def _proposes(self, caller: Caller, layer: str | None, asked: bool | None) -> bool:
        """Whether a write goes on probation because a character writes the shared layer: by its policy a proposal
        (``staged``, the default), a direct write (``direct``) or refused (``none``, or ``staged: false`` asked
        when the policy proposes)."""
        if caller.character is None or layer is not None:
            return False
        policy = self._shared_writes(caller.character) if self._shared_writes is not None else "staged"
        if policy == "direct":
            return False
        if policy == "none" or asked is False:
            raise NotPermitted(f"the character {caller.character!r} may not write the shared layer directly "
                               f"(its shared_writes policy is {policy!r})" +
                               ("" if policy == "none" else ": leave out staged, and the write is a proposal"))
        return True

    def context(self, caller: Caller, ask: Ask | None = None) -> WriteContext:
        """The write context of ``ask`` from ``caller``: the actor defaults to the caller's name; a token the
        policy stages (``WIKIMEM_STAGED_TOKENS``) puts the write on probation, as does ``staged: true``, and a
        character's write to the shared layer (a proposal, by the character's policy)."""
        ask = ask or Ask()
        policy = self._policy() if self._policy is not None else None
        by_token = caller.kind == "token" and policy is not None and policy.stages_token(caller.name)
        proposes = self._proposes(caller, self.layer(caller, ask.layer), ask.staged)
        staged = bool(ask.staged) or by_token or proposes
        return WriteContext(run=ask.run, actor=ask.actor or caller.name, source_conv=ask.source_conv,
                            idempotency_key=ask.idempotency_key, if_match=ask.if_match,
                            if_none_match=ask.if_none_match, staged=staged)

    def act(self, caller: Caller, action: str, owner: Owner | str | None = None, ask: Ask | None = None,
            **target: Any) -> Act:
        """One change ``caller`` asks for to ``owner`` (an id, or the owner already looked up): use it as
        ``with gate.act(...) as act:``, write with ``act.ctx``, tell ``act.done(commit)``; its audit event is
        logged when the block ends."""
        held = None if owner is None or isinstance(owner, str) else owner
        owner_id = held.id if held is not None else owner if isinstance(owner, str) else None
        layer = ask.layer if ask is not None else None
        target = {k: v for k, v in {**target, "layer": layer}.items() if v is not None}
        try:
            ctx = self.context(caller, ask)
        except Exception as exc:  # refused before anything ran (a layer it may not reach): audited all the same
            refused = Act(self, caller, action, owner_id, WriteContext(actor=caller.name), target, held, None)
            refused.__exit__(type(exc), exc, None)
            raise
        return Act(self, caller, action, owner_id, ctx, target, held, layer)

    @staticmethod
    def note(caller: Caller, action: str, result: str = "ok", **fields: Any) -> None:
        """An event that changes no memory (signing in or out, a token minted), logged as the acts are."""
        audit(action, actor=caller.name, result=result, via=caller.kind,
              **{k: v for k, v in fields.items() if v is not None})

    def record(self, act: Act, result: str) -> None:
        owner = act.owner_id
        if act.action == "erase-owner" and owner and self._digest is not None:
            owner = self._digest(owner)
        fields = {**act.target, **act.made}
        for hidden in _UNNAMED.get(act.action, ()):
            fields.pop(hidden, None)
        if act.ctx.actor and act.ctx.actor != act.caller.name:
            fields.setdefault("as_actor", act.ctx.actor)
        if act.ctx.staged:
            fields.setdefault("staged", True)
        audit(act.action, actor=act.caller.name, owner=owner, result=result, via=act.caller.kind, **fields)


def job_context(params: dict[str, Any], **defaults: Any) -> WriteContext:
    """The write context of a job step: what :meth:`Act.job_params` kept, the ``defaults`` where it kept none."""
    given = {k: params.get(k) for k in JOB_CONTEXT_FIELDS if params.get(k) is not None}
    return WriteContext.of(**{**defaults, **given})
