"""Replication transport: :class:`Remote`, one owner's remote repository over the ordinary git protocols, with
dulwich's client — its head, creation, a checked fetch, a compare-and-swap push, a clone, the erasure's replace
and delete. Every failure to reach the remote is :class:`RemoteUnavailable` (retriable), a refusal by the
server :class:`RemoteRejected`, a missing repository :class:`RemoteMissing`; credentials in a URL never appear
in a message; every operation is bounded in bytes received and in time (``transfer.py``). The URL template is
``urls.py``'s, refs and objects ``gitio.py``'s. How a fetch, a push and a clone keep the remote untrusted and
racing pushes safe: docs/explanation/replication-internals.md.
"""

from __future__ import annotations

import logging
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from dulwich.client import GitClient, HTTPProxyUnauthorized, HTTPUnauthorized, LocalGitClient
from dulwich.errors import GitProtocolError, NotGitRepository, ObjectFormatException, SendPackError
from dulwich.objects import ZERO_SHA
from dulwich.pack import pack_objects_to_data
from dulwich.repo import Repo
from urllib3.util.retry import Retry

from wikimem.errors import (
    InvalidName,
    RemoteError,
    RemoteMissing,
    RemoteMoved,
    RemoteRefused,
    RemoteRejected,
    RemoteUnavailable,
)

from ..objects import BRANCH, GitRepo, init_repo, oid
from .catchup import switch_to
from .gitio import (
    TRACKING,
    hexsha,
    init_bare,
    locked_ref_update,
    new_objects,
    opened,
    peek,
    refs_of,
    set_tracking,
    short,
)
from .incoming import check_incoming
from .stagedrefs import STAGED, TRACKED, follow_remote, staged_tips, tracked_ref, validate_staged_run
from .transfer import Meter, TransferLimits, metered_client, quarantine
from .urls import SCHEMES, TemplateError, redact

__all__ = ["Remote", "RemoteError", "RemoteUnavailable", "RemoteMoved", "RemoteRejected", "RemoteMissing",
           "RemoteRefused"]

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 10.0


class Remote:
    """The remote repository of one owner, reached by ``url``."""

    def __init__(self, url: str, *, timeout: float = DEFAULT_TIMEOUT, ssh_command: str | None = None,
                 limits: TransferLimits | None = None):
        self.url = url
        self.limits = limits or TransferLimits()  # every operation: bytes received, seconds in all
        parts = urlsplit(url)
        self.scheme = parts.scheme.lower() or "file"
        if self.scheme not in SCHEMES:
            raise TemplateError(f"unsupported remote scheme {self.scheme!r}")
        self.timeout = float(timeout)
        self._parts = parts
        self._ssh_command = ssh_command or (
            f"ssh -o BatchMode=yes -o ConnectTimeout={max(1, int(self.timeout))}")
        self._client: GitClient | None = None

    def __repr__(self) -> str:
        return f"Remote({self.shown!r})"

    @property
    def shown(self) -> str:
        """The URL without its password, for messages and logs."""
        return redact(self.url)

    @property
    def path(self) -> str:
        """The repository path on the remote side (a local path for file remotes)."""
        return self._parts.path if self._parts.scheme else self.url

    # -- the client ------------------------------------------------------------

    def client(self) -> GitClient:
        """dulwich's client for this URL, made once (HTTP keeps its connection pool)."""
        if self._client is None:
            p = self._parts
            if self.scheme == "file":
                # git's own receive-pack/upload-pack when git is installed: fsck on receive, small pushes
                # kept as loose objects and auto-gc'd. dulwich's in-process client writes one pack per
                # push into the remote, and lookups there slow down ~10x after 1,000 pushes.
                self._client = (metered_client("subprocess", limits=self.limits) if shutil.which("git")
                                else LocalGitClient())
            elif self.scheme in ("http", "https"):
                base = urlunsplit((p.scheme, p.netloc.rsplit("@", 1)[-1], p.path, "", ""))
                http = metered_client("http", base, username=p.username, password=p.password, timeout=self.timeout)
                # one connection attempt, no silent retries: a down remote must answer fast (503 + Retry-After)
                pool_kw = getattr(http.pool_manager, "connection_pool_kw", None)
                if pool_kw is not None:
                    pool_kw["retries"] = Retry(total=2, connect=0, read=0, status=0, redirect=2)
                self._client = http
            elif not p.hostname:  # validate_template refuses these; a Remote built by hand skips it
                raise TemplateError(f"remote {self.shown!r} has no host")
            elif self.scheme == "git":
                self._client = metered_client("tcp", p.hostname, p.port)
            else:
                self._client = metered_client("ssh", p.hostname, p.port, username=p.username,
                                              ssh_command=self._ssh_command)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    @contextmanager
    def _talking(self, what: str) -> Iterator[None]:
        """Turn whatever the transport raises into the module's errors, and bound what the remote sends (bytes and
        time, :class:`~wikimem.versioned.transfer.Meter`): past a bound the operation is :class:`RemoteRefused`."""
        shown = self.shown
        if self.scheme == "file" and not Path(self.path).parent.is_dir():
            raise RemoteUnavailable(f"{what}: {Path(self.path).parent} does not exist (is the replica mounted?)",
                                    shown)
        meter = Meter(self.limits)
        try:
            with self._converting(what), self._metered(meter):
                yield
        except Exception:
            if meter.reason is None:
                raise
            log.error("%s: %s from %s", what, meter.reason, shown)
            raise RemoteRefused(f"{what}: {shown}: {meter.reason}", shown) from None

    @contextmanager
    def _metered(self, meter: Meter) -> Iterator[None]:
        """The client's operations in this thread counted by ``meter`` (a client that cannot be: unbounded)."""
        metered = getattr(self.client(), "metered", None)
        if metered is None:
            yield
            return
        with metered(meter):
            yield

    @contextmanager
    def _converting(self, what: str) -> Iterator[None]:
        shown = self.shown
        try:
            yield
        except RemoteError:
            raise
        except NotGitRepository:
            raise RemoteMissing(f"{what}: no git repository at {shown}", shown) from None
        except (HTTPUnauthorized, HTTPProxyUnauthorized):
            raise RemoteRejected(f"{what}: {shown} refused the credentials", shown) from None
        except SendPackError as exc:
            raise RemoteRejected(f"{what}: {shown} refused the push: {_text(exc)}", shown) from None
        except ObjectFormatException as exc:  # dulwich reading the remote's objects (a file:// remote, no git)
            raise RemoteRefused(f"{what}: {shown} serves a malformed object ({exc}); refused, nothing was "
                                "applied", shown) from None
        except GitProtocolError as exc:  # HangupException included
            raise self._classify(what, exc) from None
        except (OSError, EOFError) as exc:
            raise RemoteUnavailable(f"{what}: cannot reach {shown}: {exc}", shown) from None
        except Exception as exc:  # urllib3's errors (not OSError subclasses) and the like
            if type(exc).__module__.split(".")[0] in ("urllib3", "http", "ssl", "socket"):
                raise RemoteUnavailable(f"{what}: cannot reach {shown}: {exc}", shown) from None
            raise

    def _classify(self, what: str, exc: GitProtocolError) -> RemoteError:
        text = _text(exc)
        low = text.lower()
        shown = self.shown
        if any(s in low for s in ("not found", "no such repository", "does not appear to be a git repository",
                                  "not a git repository", "repository not exported", "resp 404")):
            return RemoteMissing(f"{what}: no git repository at {shown} ({text})", shown)
        if any(s in low for s in ("resp 401", "resp 403", "permission denied", "access denied")):
            return RemoteRejected(f"{what}: {shown} refused access ({text})", shown)
        if "corrupt" in low or "bad tree object" in low or "malformed" in low:  # git's upload-pack on a bad object
            return RemoteRefused(f"{what}: {shown} serves a malformed object ({text}); refused, nothing was applied",
                                 shown)
        return RemoteUnavailable(f"{what}: {shown} failed: {text}", shown)

    # -- operations ----------------------------------------------------------------

    def remote_head(self) -> str | None:
        """The remote's ``main`` (None when the repository is empty); RemoteMissing when it does not exist."""
        with self._talking("read remote head"):
            if self.scheme == "file":  # a ref file to read: no need for git's upload-pack
                target = Repo(self.path)
                try:
                    return hexsha(peek(target))
                finally:
                    target.close()
            # dulwich's GitClient.get_refs says bytes, yet every client encodes a str path itself (as since the start)
            refs = self.client().get_refs(self.path)  # type: ignore[arg-type]
            return hexsha(refs_of(refs).get(BRANCH))

    def create(self) -> bool:
        """Create the remote repository if this scheme allows it; True when it was created now."""
        if self.scheme == "file":
            folder = Path(self.path)
            if not folder.parent.is_dir():  # an unmounted replica disk must not become a folder on this one
                raise RemoteUnavailable(f"create: {folder.parent} does not exist (is the replica mounted?)",
                                        self.shown)
            return init_bare(folder)
        if self.scheme in ("ssh", "git+ssh"):
            return self._ssh_init()
        return False  # http(s), git://: the server creates on push, or the operator prepares it

    def _ssh_init(self) -> bool:
        script = ("if test -e {q}/HEAD; then echo exists; else git init -q --bare {q} && "
                  "git --git-dir={q} symbolic-ref HEAD refs/heads/main && echo created; fi")
        done = self._ssh_run("create", script, self.timeout * 3)
        if done.returncode != 0:
            raise RemoteRejected(f"create: git init --bare on {self.shown} failed: {done.stderr.strip()[-300:]}",
                                 self.shown)
        return done.stdout.strip().endswith("created")

    def staged_heads(self) -> dict[bytes, str]:
        """The remote's staged branches (runs on probation): ``{ref name: commit}``; RemoteMissing as
        :meth:`remote_head`."""
        with self._talking("read remote refs"):
            if self.scheme == "file":
                target = Repo(self.path)
                try:
                    found = target.get_refs()
                finally:
                    target.close()
            else:
                # (a str path, as remote_head says)
                found = refs_of(self.client().get_refs(self.path))  # type: ignore[arg-type]
        return {name: sha.decode("ascii") for name, sha in found.items()
                if name.startswith(STAGED) and sha and sha != ZERO_SHA}

    def fetch(self, repo: Path | str | Repo) -> str | None:
        """Fetch the remote ``main`` into ``repo``; set ``refs/remotes/origin/main``; return the remote head.

        :class:`RemoteRefused` (no ref moved) when a new commit breaks the rules of
        :mod:`~wikimem.versioned.replication.incoming`, or the remote serves a malformed object.
        """
        try:
            return self._fetch(repo)
        except RemoteRefused as exc:
            if exc.commit is None:  # refused by the transport: name the head that was served
                try:
                    exc.commit = self.remote_head()
                except RemoteError:
                    pass
            raise

    def _fetch(self, repo: Path | str | Repo) -> str | None:
        with opened(repo) as local, self._talking("fetch"), quarantine(local) as q:
            def wants(refs, depth=None, **_):
                found = refs_of(refs)
                heads = [found.get(BRANCH)] + [v for k, v in found.items() if k.startswith(STAGED)]
                return list(dict.fromkeys(h for h in heads if h and h != ZERO_SHA and h not in local.object_store))

            pack, commit, abort = q.pack()  # the pack lands in the quarantine, never in the folder's objects
            try:
                result = self.client().fetch_pack(self.path, wants, local.get_graph_walker(), pack.write)
            except BaseException:
                abort()
                raise
            commit()
            found = refs_of(result.refs)
            head = found.get(BRANCH)
            if head is None or head == ZERO_SHA:
                set_tracking(local, None)
                return None
            self._check(q.store, local, head)
            staged, offered = self._staged(q.store, local, found, head)
            q.keep([head, *staged.values()], everything=len(staged) == offered)
            before = staged_tips(local, TRACKED)
            set_tracking(local, head)
            follow_remote(local, staged, before)
            return head.decode("ascii")

    def _staged(self, store, local: Repo, found: dict, head: bytes) -> tuple[dict[str, bytes], int]:
        """The remote's staged branches (``refs/heads/staged/<run>``) whose new commits pass the same checks as
        ``main``'s (one that does not is left out, logged: it never reaches a ref, nor its objects the folder's
        store), and how many the remote offered."""
        out: dict[str, bytes] = {}
        offered = 0
        for name, sha in found.items():
            if not name.startswith(STAGED) or not sha or sha == ZERO_SHA:
                continue
            offered += 1
            try:
                run = validate_staged_run(name[len(STAGED):].decode("ascii"))
                check_incoming(store, sha, (head, peek(local), peek(local, TRACKING),
                                            peek(local, tracked_ref(run))), self.shown)
            except (UnicodeDecodeError, InvalidName, RemoteRefused) as exc:
                log.error("%s: refused the remote's %s from %s: %s", local.path, name.decode("ascii", "replace"),
                          self.shown, exc)
                continue
            out[run] = sha
        return out, offered

    def _check(self, store, local: Repo, head: bytes) -> None:
        """The remote is untrusted input: every commit new to ``local`` is checked (in the quarantine ``store``)
        before a ref moves to it."""
        try:
            check_incoming(store, head, (peek(local), peek(local, TRACKING)), self.shown)
        except RemoteRefused as exc:
            log.error("%s: refused the remote's main %s from %s: %s", local.path, head.decode("ascii"),
                      self.shown, exc)
            raise

    def push(self, repo: Path | str | Repo, new: str | None, expected: str | None, *, name=BRANCH,
             have: str | None = None, rewritten: bool = False) -> None:
        """Move the remote ``name`` (``main``, or a staged run's branch) from ``expected`` (None: it has none) to
        ``new`` (None: delete it), or raise.

        :class:`RemoteMoved` when the remote is not at ``expected`` (nothing
        was changed there); on success the tracking ref of ``name`` is ``new``.
        ``have`` names a commit the remote holds (a staged branch's base on
        ``main``): only what lies after it is sent. ``rewritten``: ``new`` need not descend from ``expected``
        (a staged branch a forget rewrote); what lies after ``have`` is sent.
        """
        want, old = (new.encode("ascii") if new else ZERO_SHA), (expected.encode("ascii") if expected else None)
        base = (None if rewritten else old) or (have.encode("ascii") if have else None)
        track = TRACKING if name == BRANCH else tracked_ref(name[len(STAGED):].decode("ascii"))

        def update_refs(refs):
            current = refs_of(refs).get(name)
            current = None if current == ZERO_SHA else current
            if current != old:  # abort before a byte of the pack is sent
                raise RemoteMoved(f"push: {self.shown} is at {short(current)}, not {short(old)}", self.shown,
                                  head=hexsha(current), expected=expected)
            return {name: want}

        with opened(repo) as local, self._talking("push"):
            if self.scheme == "file":
                self._push_here(local, want, old, expected, name, base)
                set_tracking(local, None if want == ZERO_SHA else want, track)
                return

            def pack_data(have, want_, *, ofs_delta=True, progress=None, **_):  # dulwich's GeneratePackDataFunc
                objects = [] if want == ZERO_SHA else new_objects(local.object_store, want, base)
                return pack_objects_to_data(objects)

            # str path: as for get_refs, dulwich's stubs say bytes and its clients encode a str themselves
            result = self.client().send_pack(self.path, update_refs, pack_data)  # type: ignore[arg-type]
            status = (result.ref_status or {}).get(name)
            if status is not None:
                # receive-pack found the ref moved under its lock (a racing push), or a hook said no
                head = self._ref_head(name)
                if head != expected:
                    raise RemoteMoved(f"push: {self.shown} moved during the push ({status})", self.shown,
                                      head=head, expected=expected)
                raise RemoteRejected(f"push: {self.shown} refused {name.decode()}: {status}", self.shown)
            set_tracking(local, None if want == ZERO_SHA else want, track)

    def _ref_head(self, name) -> str | None:
        if name == BRANCH:
            return self.remote_head()
        refs = self.client().get_refs(self.path)  # type: ignore[arg-type]
        return hexsha(refs_of(refs).get(name))

    def _push_here(self, local: Repo, want: bytes, old: bytes | None, expected: str | None, name=BRANCH,
                   base: bytes | None = None) -> None:
        """A file:// push in this process: the new objects as loose objects (checked, fsynced), then
        the ref moved by compare-and-swap under git's own ref lock.

        What git's receive-pack does for a small push (unpack below ``receive.unpackLimit``, check
        the objects, lock and compare the ref), without its three processes; the measured figures
        are in bench/cluster.py. dulwich's LocalGitClient would write one pack per push instead.
        """
        from dulwich.errors import ObjectFormatException

        target = Repo(self.path)
        try:
            target.object_store.fsync_object_files = True  # on the replica's disk before the ref moves
            current = peek(target, name)
            if current != old:
                raise RemoteMoved(f"push: {self.shown} is at {short(current)}, not {short(old)}", self.shown,
                                  head=hexsha(current), expected=expected)
            for obj in ([] if want == ZERO_SHA else new_objects(local.object_store, want, base)):
                try:
                    obj.check()
                except ObjectFormatException as exc:
                    raise RemoteRejected(f"push: {self.shown} refused object {obj.id.decode()}: {exc}",
                                         self.shown) from None
                if obj.id not in target.object_store:
                    target.object_store.add_object(obj)
            if want == ZERO_SHA:
                def update():
                    return target.refs.remove_if_equals(name, None if old is None else oid(old))
            else:
                def update():
                    return target.refs.set_if_equals(name, None if old is None else oid(old), oid(want))
            lock = Path(target.controldir()) / (name.decode("ascii") + ".lock")
            if not locked_ref_update(update, lock):
                now = peek(target, name)
                raise RemoteMoved(f"push: {self.shown} moved during the push", self.shown, head=hexsha(now),
                                  expected=expected)
        finally:
            target.close()

    def clone(self, target: Path | str) -> str | None:
        """A new working folder at ``target`` holding the remote ``main``; its head.

        An empty repository fetches the remote (every commit checked, see
        :meth:`fetch`), then the files are written the way a fast-forward
        writes them (:func:`~wikimem.versioned.replication.catchup.switch_to`, through the
        folder's door) — never by a generic checkout — and ``main`` moves last.
        """
        target = Path(target)
        if (target / ".git").exists():
            raise FileExistsError(f"{target} already holds a repository")
        target.mkdir(parents=True, exist_ok=True)
        local = init_repo(target)
        try:
            head = self.fetch(local)
        finally:
            local.close()
        if head is not None:
            git = GitRepo(target)
            try:
                switch_to(git, target, head.encode("ascii"))
            finally:
                git.close()
        return head

    # -- erasure: replace the history, delete the repository, prune ------------------------------

    def replace(self, repo: Path | str | Repo, new: str, expected: str | None) -> None:
        """Move the remote ``main`` from ``expected`` to ``new`` even when ``new`` does not descend from it (a
        history rewritten by a forget): the same compare-and-swap as :meth:`push`, without the fast-forward."""
        want, old = new.encode("ascii"), (expected.encode("ascii") if expected else None)
        with opened(repo) as local, self._talking("replace"):
            have = [oid(old)] if old is not None and oid(old) in local.object_store else []
            if self.scheme == "file":
                target = Repo(self.path)
                try:
                    current = peek(target)
                    if current != old:
                        raise RemoteMoved(f"replace: {self.shown} is at {short(current)}, not {short(old)}",
                                          self.shown, head=hexsha(current), expected=expected)
                    target.object_store.add_pack_data(*local.object_store.generate_pack_data(have, [oid(want)]))
                    lock = Path(target.controldir()) / "refs" / "heads" / "main.lock"
                    if not locked_ref_update(lambda: target.refs.set_if_equals(
                            BRANCH, None if old is None else oid(old), oid(want)), lock):
                        raise RemoteMoved(f"replace: {self.shown} moved meanwhile", self.shown,
                                          head=hexsha(peek(target)), expected=expected)
                finally:
                    target.close()
            else:
                def update_refs(refs):
                    current = refs_of(refs).get(BRANCH)
                    current = None if current == ZERO_SHA else current
                    if current != old:
                        raise RemoteMoved(f"replace: {self.shown} is at {short(current)}, not {short(old)}",
                                          self.shown, head=hexsha(current), expected=expected)
                    return {BRANCH: want}

                def pack_data(_have, _want, *, ofs_delta=True, progress=None, **_):  # GeneratePackDataFunc
                    return local.object_store.generate_pack_data(have, [oid(want)])

                # str path: as in push (dulwich's stubs say bytes; its clients encode a str themselves)
                result = self.client().send_pack(self.path, update_refs, pack_data)  # type: ignore[arg-type]
                status = (result.ref_status or {}).get(BRANCH)
                if status is not None:
                    raise RemoteRejected(f"replace: {self.shown} refused main: {status} (a server that denies "
                                         "non-fast-forward updates must allow them for wikimem's forget)",
                                         self.shown)
            set_tracking(local, want)

    def delete(self) -> bool:
        """Delete the remote repository where this host can (file://: its folder; ssh: ``rm -rf`` over a
        shell); True when it is gone now or was never there, False when the scheme cannot (http(s), git://)."""
        if self.scheme == "file":
            folder = Path(self.path)
            if not folder.parent.is_dir():
                raise RemoteUnavailable(f"delete: {folder.parent} does not exist (is the replica mounted?)",
                                        self.shown)
            if folder.exists() and not (folder / "HEAD").exists() and not (folder / ".git").exists():
                raise RemoteRejected(f"delete: {self.shown} is not a git repository; left alone", self.shown)
            if folder.exists():
                shutil.rmtree(folder)
            return True
        if self.scheme in ("ssh", "git+ssh"):
            return self.ssh_script("delete", "if test -e {q}/HEAD; then rm -rf {q}; fi; echo gone")
        return False

    def ssh_script(self, what: str, template: str) -> bool:
        """Run a shell script on the ssh remote's host, ``{q}`` being the repository path; False without a
        shell there (git-shell, a forced command)."""
        done = self._ssh_run(what, template, self.timeout * 6)
        return done.returncode == 0 and done.stdout.strip().endswith("gone")

    def _ssh_run(self, what: str, template: str, timeout: float) -> subprocess.CompletedProcess:
        """``template`` (``{q}``: the repository path, quoted) run by a shell on the ssh remote's host;
        :class:`RemoteUnavailable` when ssh itself fails (no connection, no auth, the timeout)."""
        p = self._parts
        path = p.path[1:] if p.path.startswith("/~") else p.path  # ssh://host/~/x.git → ~/x.git
        q = shlex.quote(path) if not path.startswith("~/") else "~/" + shlex.quote(path[2:])
        argv = shlex.split(self._ssh_command) + (["-p", str(p.port)] if p.port else [])
        argv += (["-l", p.username] if p.username else []) + [p.hostname or "", template.format(q=q)]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise RemoteUnavailable(f"{what}: ssh to {self.shown} timed out", self.shown) from None
        except OSError as exc:
            raise RemoteUnavailable(f"{what}: cannot run ssh for {self.shown}: {exc}", self.shown) from None
        if done.returncode == 255:  # ssh's own failure: no connection, no auth
            raise RemoteUnavailable(f"{what}: ssh to {self.shown} failed: {done.stderr.strip()[-300:]}", self.shown)
        return done


def _text(exc: BaseException) -> str:
    lines = getattr(exc, "stderr_lines", None)
    if lines:
        return " ".join(x.decode("utf-8", "replace").strip() for x in lines)[-500:]
    parts = [a.decode("utf-8", "replace") if isinstance(a, bytes) else str(a) for a in exc.args]
    return " ".join(parts)[-500:] or type(exc).__name__
