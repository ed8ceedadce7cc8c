"""The mutation seam: how every write of a store happens, and who hears of it.

Design notes: docs/explanation/durability-internals.md (``wikimem/store/writer.py``).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Protocol

from wikimem.errors import WikimemError
from wikimem.locking import FileLock

from .door import Door
from .journal import Journal

__all__ = ["Mutation", "MutationHook", "PlainHook", "Writer", "Unit", "UnitInfo", "Landing", "LOCK_NAME", "MAX_ROUND"]

# Units landed together at most (a bound on how long the first caller of a round waits for the others).
MAX_ROUND = 64
# Files whose last landed content and its parse the writer keeps (the next unit's read-modify-write of the
# same file then skips the parse when the disk still holds those bytes).
PARSE_MEMO = 32

LOCK_NAME = ".wikimem.lock"


@dataclass(frozen=True)
class Mutation:
    """One successful mutation: its journal record and the files it changed.

    ``paths`` are relative to the store root, with ``/`` separators
    (``"wiki/preferences.md"``, ``"diary/2026-07-21.md"``).
    """

    record: dict
    paths: tuple[str, ...]


@dataclass(frozen=True)
class UnitInfo:
    """What a unit carries down to its commit; every field may be empty (the plain store records none of it).

    - ``run``, ``actor``, ``source_conv``, ``idempotency_key``: who wrote, as part of what
      (``Wikimem-Run``, ``Wikimem-Actor``, ``Wikimem-Source-Conv``, ``Wikimem-Idempotency-Key``);
    - ``message``: the commit's summary line (else one made from the journal records);
    - ``action``: the commit's ``Wikimem-Action`` when it is not its single record's (``revert``, ``restore``…);
    - ``request``: the hash of what the idempotency key was used for (``Wikimem-Request``);
    - ``reverts``: the one commit a revert undid or a restore went back to (``Wikimem-Reverts``);
    - ``reverts_commits``, ``reverts_runs``: every commit and run a rollback undid (a trailer each);
    - ``undo_items``: the items an undo changes, one line each (the commit's body);
    - ``trailers``: further ``(name, value)`` trailers, written as ``Wikimem-<name>: <value>`` after the others
      (an approval's ``Approved-By``, a staged commit's ``Base``).
    """

    run: str | None = None
    actor: str | None = None
    source_conv: str | None = None
    idempotency_key: str | None = None
    message: str | None = None
    action: str | None = None
    request: str | None = None
    reverts: str | None = None
    reverts_commits: tuple[str, ...] = ()
    reverts_runs: tuple[str, ...] = ()
    undo_items: tuple[str, ...] = ()
    trailers: tuple[tuple[str, str], ...] = ()

    def filled_from(self, other: UnitInfo) -> UnitInfo:
        """This info, with ``other``'s value in each field this one leaves empty (a nested unit joining)."""
        missing = {f.name: getattr(other, f.name) for f in fields(self) if not getattr(self, f.name)}
        return replace(self, **missing) if missing else self

    def to_dict(self) -> dict[str, object]:
        """The fields that are set."""
        return {k: v for k, v in asdict(self).items() if v}


class MutationHook(Protocol):
    """What a layer above the plain store plugs into the seam."""

    def locked(self) -> AbstractContextManager[None]:
        """Inter-process exclusion held for a whole unit."""

    def writing(self, unit: Unit, paths: tuple[str, ...]) -> None:
        """Called inside the lock before ``paths`` (relative to the root) are written or deleted."""

    def committed(self, unit: Unit) -> str | None:
        """Called once per successful unit, inside the lock, before anything of it is on disk; returns the
        commit id (or None). A hook may also define ``land(landing)`` (see :class:`Landing`)."""


class PlainHook:
    """The default hook: an ``flock`` on ``<root>/.wikimem.lock``, nothing else."""

    def __init__(self, root: Path):
        self._lock = FileLock(Path(root) / LOCK_NAME)

    def locked(self) -> AbstractContextManager[None]:
        return self._lock.hold()

    def writing(self, unit: Unit, paths: tuple[str, ...]) -> None:
        return None

    def committed(self, unit: Unit) -> str | None:
        return None


@dataclass
class Unit:
    """The state of one unit of work in progress, and what its hook reported."""

    info: UnitInfo
    journal_size: int
    originals: dict[str, bytes | None] = field(default_factory=dict)
    mutations: list[Mutation] = field(default_factory=list)
    staged: dict[str, bytes | None] = field(default_factory=dict)  # relpath -> new content (None: delete)
    parsed: dict[str, tuple] = field(default_factory=dict)  # relpath -> (the bytes parsed, what they parsed to)
    records: list[dict] = field(default_factory=list)  # journal records, written with the files
    payload: object = None  # left by the caller for the hook (e.g. the result a retry replays)
    commit: str | None = None  # the hook's answer once the unit committed
    final: frozenset[str] = frozenset()  # once landed: the paths whose content on disk is this unit's


class Landing:
    """One round of units to land, as the writer hands it to ``hook.land``.

    ``units`` in the order they ran (each one's staged files build on the
    ones before); ``staged`` the content each path ends with; ``records`` the
    journal lines of the round, appended at ``journal_size``.
    :meth:`write` puts the files and the journal lines on disk (synced when
    ``durable``); :meth:`restore` puts them back as they were before the round
    (a hook whose landing fails after writing calls it before recording the
    failure; the writer calls it anyway, it runs once).
    """

    def __init__(self, writer: Writer, journal_size: int):
        self.writer = writer
        self.journal_size = journal_size
        self.units: list[Unit] = []
        self.staged: dict[str, bytes | None] = {}
        self.originals: dict[str, bytes | None] = {}  # what the disk held before the round
        self.records: list[dict] = []
        self.tickets: list[_Ticket] = []  # the members let into the round (woken once it landed)
        self._owner: dict[str, Unit] = {}
        self._written = False

    def add(self, unit: Unit) -> None:
        self.units.append(unit)
        for rel, new in unit.staged.items():
            self.originals.setdefault(rel, unit.originals.get(rel))
            self.staged[rel] = new
            self._owner[rel] = unit
        self.records.extend(unit.records)

    def write(self, durable: bool) -> None:
        """Write each changed file once, atomically, then the journal lines (one append); tell the listeners."""
        door = self.writer.door
        self._written = True
        for rel, new in self.staged.items():
            if new == self.originals.get(rel, _MISSING):
                continue
            door.put(rel, new, durable=durable)
        self.writer.journal.write_many(self.records, durable=durable)
        for unit in self.units:
            unit.final = frozenset(rel for rel, owner in self._owner.items() if owner is unit)
        for rel, unit in self._owner.items():
            memo = unit.parsed.get(rel)
            if memo is not None and memo[0] is self.staged[rel]:
                self.writer.remember(rel, memo)
        # Listeners (the store's caches and revision) hear of a change once it is on disk, so that
        # another thread that reacts to it reads the new files, never the old ones.
        self.writer.notify(tuple(self.staged))

    def restore(self, durable: bool = True) -> None:
        """Put every file of the round back as it was and cut the journal back (once; nothing if not written)."""
        if not self._written:
            return
        self._written = False
        door = self.writer.door
        for rel, old in self.originals.items():
            try:
                if door.read(rel) == old:
                    continue
            except WikimemError:  # something else took the file's place: put ours back over it
                pass
            door.put(rel, old, durable=durable)
        self.writer.journal.truncate(self.journal_size, durable=durable)
        self.writer.notify(tuple(self.staged))


_MISSING = object()


class _OwnedLock:
    """A re-entrant lock that can tell whether the calling thread holds it."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._owner: int | None = None
        self._depth = 0

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if not self._lock.acquire(blocking, timeout):
            return False
        self._owner = threading.get_ident()
        self._depth += 1
        return True

    def release(self) -> None:
        self._depth -= 1
        if not self._depth:
            self._owner = None
        self._lock.release()

    def owned(self) -> bool:
        return self._owner == threading.get_ident()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


class _Ticket:
    """A thread waiting to run a unit: led by itself, or run as a member of someone else's round.

    Each ticket has its own events, so that a hand-over wakes exactly one
    thread: ``go`` when it may run (as the next leader, or as the member
    whose turn it is), ``landed`` when its round landed (``error`` then says
    how). A member hands the turn straight on to the next one (``next``); the
    last one wakes the leader (``baton``).
    """

    __slots__ = ("role", "go", "landed", "error", "round", "next", "baton")

    def __init__(self) -> None:
        self.role = ""  # "lead" | "member" | "solo" | "refused" (set by whoever hands the ticket on)
        self.go = threading.Event()
        self.landed = threading.Event()
        self.error: BaseException | None = None
        self.round: Landing | None = None
        self.next: _Ticket | None = None
        self.baton: threading.Event | None = None

    def pass_turn(self) -> None:
        """This member's block is over (its unit joined the round, or failed): the next one's turn."""
        if self.next is not None:
            self.next.go.set()
        elif self.baton is not None:
            self.baton.set()


class Writer:
    """Serialises the writes of one store folder, lands them in rounds and reports them to the hook."""

    def __init__(self, root: Path, journal: Journal, hook: MutationHook | None = None, door: Door | None = None):
        self.root = Path(root)
        # Every file of the folder is read and written through it (a staged run's writer is given an
        # OverlayDoor: its files live in memory over a git tree, never on disk).
        self.door = door if door is not None else Door(self.root)
        self.journal = journal
        self.hook: MutationHook = hook if hook is not None else PlainHook(self.root)
        # Held by the leader of a round for the whole round; take it (before any inter-process lock) to keep
        # writers out. Never take it inside a unit's block.
        self.lock = _OwnedLock()
        self.group_commit = True
        self._unit: Unit | None = None
        self._unit_thread: int | None = None  # the thread whose unit is in progress
        self._round: Landing | None = None  # the round gathering units
        self._queue_lock = threading.Lock()
        self._queue: deque[_Ticket] = deque()
        self._leading = False  # a ticket leads (or is about to lead) a round of the queue
        self._memo: dict[str, tuple] = {}  # relpath -> (content landed, what it parsed to), see PARSE_MEMO
        self.listeners: list[Callable[[tuple[str, ...]], None]] = []

    @property
    def queued(self) -> int:
        """How many threads wait for a round (they will join the next one, or lead it)."""
        with self._queue_lock:
            return len(self._queue)

    @property
    def active(self) -> bool:
        """Whether this thread is inside a unit (other threads never see a unit's staged changes)."""
        return self._unit is not None and self._unit_thread == threading.get_ident()

    @contextmanager
    def unit(self, info: UnitInfo | None = None) -> Iterator[Unit]:
        """Run the block as one unit (joins the enclosing unit when nested: its ``info`` fills what is unset).

        Returns once the unit has landed with its round (``unit.commit`` set);
        raises what the block raised, or what failed the round's landing.
        """
        info = info if info is not None else UnitInfo()
        if self.active:
            assert self._unit is not None
            self._unit.info = self._unit.info.filled_from(info)
            yield self._unit
            return
        ticket = self._arrive()
        if ticket.role == "refused":
            assert ticket.error is not None
            raise ticket.error
        if ticket.role == "member":
            with self._member(ticket, info) as unit:
                yield unit
        else:
            with self._lead(ticket, info) as unit:
                yield unit

    # -- rounds ------------------------------------------------------------

    def _arrive(self) -> _Ticket:
        """This thread's ticket: lead a round at once, or wait to be let into (or to lead) one."""
        ticket = _Ticket()
        if not self.group_commit or self.lock.owned():
            ticket.role = "solo"  # a round of its own (a thread holding the lock cannot wait for a leader)
            return ticket
        with self._queue_lock:
            if not self._leading:
                self._leading = True
                ticket.role = "lead"
                return ticket
            self._queue.append(ticket)
        ticket.go.wait()
        return ticket

    @contextmanager
    def _lead(self, ticket: _Ticket, info: UnitInfo) -> Iterator[Unit]:
        """Lead a round: the locks, this thread's unit, the queued units, the landing.

        A leader that cannot take the locks (the owner was deleted, another
        process holds its lock too long) fails the threads queued behind it
        with the same error at once, instead of letting each wait its turn.
        """
        locked = False
        refused: BaseException | None = None
        try:
            with self.lock, self.hook.locked():
                locked = True
                landing = Landing(self, self.journal.size())
                self._round = landing
                own: BaseException | None = None
                unit = Unit(info=info, journal_size=landing.journal_size)
                try:
                    with self._running(unit, landing):
                        yield unit
                except BaseException as exc:  # noqa: BLE001 - re-raised below, after the others' units
                    own = exc
                try:
                    if ticket.role == "lead":
                        self._gather(landing)
                finally:
                    self._round = None
                    failed = self._land(landing)  # (always: the members that joined wait for it)
                if own is not None:
                    raise own
                if failed is not None and unit in landing.units:
                    raise failed
        except Exception as exc:  # (an interrupt of this thread is not the queued threads' error)
            if not locked:
                refused = exc
            raise
        finally:
            if ticket.role == "lead":
                self._hand_on(refused)

    @contextmanager
    def _member(self, ticket: _Ticket, info: UnitInfo) -> Iterator[Unit]:
        """Run this thread's unit in the round of the leader that let it in; return once that round landed."""
        landing = ticket.round
        assert landing is not None
        unit = Unit(info=info, journal_size=landing.journal_size)
        try:
            with self._running(unit, landing):
                yield unit
        finally:
            ticket.pass_turn()
        if unit not in landing.units:
            return
        ticket.landed.wait()
        if ticket.error is not None:
            raise ticket.error

    @contextmanager
    def _running(self, unit: Unit, landing: Landing) -> Iterator[None]:
        """The block of one unit, in this thread; a unit that ran well (with changes) joins the round."""
        self._unit, self._unit_thread = unit, threading.get_ident()
        try:
            try:
                yield
                if unit.mutations:
                    unit.commit = self.hook.committed(unit)
                    landing.add(unit)
            except BaseException:
                if unit.staged:
                    self.notify(tuple(unit.staged))  # what was read back from the stage is stale now
                raise
        finally:
            self._unit, self._unit_thread = None, None

    def _gather(self, landing: Landing) -> None:
        """Let the threads queued meanwhile run their units in this round, one at a time, in arrival order.

        The queue is taken in batches: the first member of a batch is woken,
        each hands the turn to the next, the last one wakes this leader, which
        then looks for threads that queued meanwhile.
        """
        while len(landing.tickets) < MAX_ROUND:
            with self._queue_lock:
                batch = [self._queue.popleft() for _ in range(min(len(self._queue), MAX_ROUND - len(landing.tickets)))]
            if not batch:
                return
            baton = threading.Event()
            for i, ticket in enumerate(batch):
                ticket.round, ticket.role = landing, "member"
                ticket.next = batch[i + 1] if i + 1 < len(batch) else None
                ticket.baton = baton
            landing.tickets.extend(batch)
            batch[0].go.set()
            baton.wait()

    def _land(self, landing: Landing) -> BaseException | None:
        """Land the round's units; wake its members with the outcome. The error, or None."""
        error: BaseException | None = None
        if landing.units:
            land = getattr(self.hook, "land", None)
            try:
                if land is None:
                    landing.write(durable=True)
                else:
                    land(landing)
            except BaseException as exc:  # noqa: BLE001 - handed to every unit of the round
                error = exc
                try:
                    landing.restore()
                except Exception:  # the hook's record of the failure lets the next writer finish this
                    pass
        for ticket in landing.tickets:
            ticket.error = error
            ticket.landed.set()
        return error

    def _hand_on(self, refused: BaseException | None = None) -> None:
        """The next queued thread leads the next round (or nobody leads until one arrives); with ``refused``
        (the locks could not be taken) every queued thread fails with it."""
        with self._queue_lock:
            if refused is not None:
                while self._queue:
                    ticket = self._queue.popleft()
                    ticket.role, ticket.error = "refused", refused
                    ticket.go.set()
            if self._queue:
                ticket = self._queue.popleft()
                ticket.role = "lead"
                ticket.go.set()
            else:
                self._leading = False

    # -- inside a unit -------------------------------------------------------

    def read(self, rel: str) -> bytes | None:
        """A file's content as this thread's unit in progress will leave it (the disk's otherwise).

        A unit sees the units before it in its round (they have not landed yet).
        """
        unit = self._unit if self.active else None
        if unit is not None:
            if rel in unit.staged:
                return unit.staged[rel]
            landing = self._round
            if landing is not None and rel in landing.staged:
                return landing.staged[rel]
        return self.door.read(rel)

    def parse(self, rel: str, parser: Callable[[bytes | None], list]) -> tuple[bytes | None, list]:
        """``(content, parser(content))`` of a file as :meth:`read` sees it, parsed once per staged version.

        A batch of many mutations of one file parses it once, not once per
        mutation; the list returned is the caller's to change.
        """
        data = self.read(rel)
        unit = self._unit if self.active else None
        memo = unit.parsed.get(rel) if unit is not None else None
        if memo is not None and memo[0] is data:
            return data, list(memo[1])
        landed = self._memo.get(rel) if unit is not None else None
        if unit is not None and landed is not None and landed[0] == data:  # (a path has one parser)
            unit.parsed[rel] = (data, list(landed[1]))
            return data, list(landed[1])
        parsed = parser(data)
        if unit is not None:
            unit.parsed[rel] = (data, list(parsed))
        return data, parsed

    def apply(self, changes: dict[str, tuple[bytes | None, bytes | None]], record: dict | None,
              parsed: dict[str, list] | None = None) -> Mutation:
        """Stage ``{relpath: (old, new)}`` (``new=None`` deletes) and the journal ``record``.

        ``parsed`` may give what a new content parses to (the caller rendered
        it from that), so the next :meth:`parse` of it costs nothing.

        Must run inside :meth:`unit`. ``old`` is what the caller read under
        the lock (with :meth:`read`). Nothing reaches the disk before the unit
        lands; then either everything does, or (on any error) the files and
        the journal stay as they were.
        """
        unit = self._unit
        if unit is None or not self.active:
            raise RuntimeError("Writer.apply outside a unit")
        self.hook.writing(unit, tuple(changes))
        for rel, (old, new) in changes.items():
            unit.originals.setdefault(rel, old)
            unit.staged[rel] = new
            if parsed is not None and rel in parsed:
                unit.parsed[rel] = (new, list(parsed[rel]))
        if record is not None:
            unit.records.append(record)
        mutation = Mutation(record=record or {}, paths=tuple(changes))
        unit.mutations.append(mutation)
        return mutation

    def remember(self, rel: str, memo: tuple) -> None:
        """Keep what a landed file parsed to (``memo`` = (content, items)), for the next unit that reads it."""
        self._memo.pop(rel, None)
        self._memo[rel] = memo
        while len(self._memo) > PARSE_MEMO:
            self._memo.pop(next(iter(self._memo)))

    def notify(self, paths: tuple[str, ...]) -> None:
        """Tell the listeners (the store's caches) that these files changed on disk, or that what was staged
        for them is void."""
        for listener in self.listeners:
            listener(paths)
