"""Replication transport: one owner repository and its git remote, over the ordinary git protocols.

``WIKIMEM_REMOTE`` is a URL template with ``{owner}`` standing for the
owner's folder name (e.g. ``ssh://git@backup/wikimem/{owner}.git``,
``https://git.example/wikimem/{owner}.git``, ``file:///mnt/replica/{owner}.git``
or a plain absolute path). :func:`validate_template` checks it once;
:func:`remote_url` fills it in.

:class:`Remote` speaks to one remote repository with dulwich's client (the
choice and its figures are in ``bench/cluster.py`` and the README):

- :meth:`Remote.remote_head` — the remote's ``main`` (None while it is empty);
- :meth:`Remote.create` — create the remote repository when the scheme
  allows it (``file``: a bare repository; ``ssh``: ``git init --bare`` over
  ssh; http(s) and git:// cannot: such servers must create on push or be
  prepared by hand);
- :meth:`Remote.fetch` — its objects into a local repository, plus the
  remote-tracking ref ``refs/remotes/origin/main`` — once every new commit
  passed :func:`~wikimem.versioned.replication.incoming.check_incoming` (the remote is
  untrusted input: :class:`RemoteRefused` otherwise, and no ref moves); the
  remote's staged branches (``refs/heads/staged/<run>``, runs on probation)
  come along, each checked the same way (one that fails is left out, logged),
  and the local ones follow them (:func:`~wikimem.versioned.replication.stagedrefs.follow_remote`);
- :meth:`Remote.push` — compare-and-swap: ``main`` (or, with ``name``, a
  staged branch, which ``new=None`` deletes) moves only from the commit the
  caller names. The client aborts before sending anything when the
  advertised value differs, and git's receive-pack re-checks the old value
  under its ref lock, so a push racing another one fails rather than
  overwrites. Either way the caller gets :class:`RemoteMoved` with the
  remote's head;
- :meth:`Remote.clone` — a new working folder at the remote's ``main``
  (a checked fetch, then the files written as a fast-forward writes them).

Every failure to reach the remote is :class:`RemoteUnavailable` (retriable);
a refusal by the server is :class:`RemoteRejected`; a repository that does
not exist is :class:`RemoteMissing`. Credentials in a URL never appear in a
message.
"""

from __future__ import annotations

import logging
import re
import shlex
import shutil
import stat
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from dulwich.client import (
    GitClient,
    HttpGitClient,
    HTTPProxyUnauthorized,
    HTTPUnauthorized,
    LocalGitClient,
    SSHGitClient,
    SubprocessGitClient,
    TCPGitClient,
)
from dulwich.errors import GitProtocolError, NotGitRepository, ObjectFormatException, SendPackError
from dulwich.objects import S_ISGITLINK, ZERO_SHA
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

from ..objects import BRANCH, GitRepo, init_repo, oid, ref
from .catchup import switch_to
from .incoming import check_incoming
from .stagedrefs import STAGED, TRACKED, follow_remote, staged_tips, tracked_ref, validate_staged_run

__all__ = ["Remote", "RemoteError", "RemoteUnavailable", "RemoteMoved", "RemoteRejected", "RemoteMissing",
           "RemoteRefused", "TemplateError", "validate_template", "remote_url", "TRACKING", "SCHEMES", "set_tracking"]

log = logging.getLogger(__name__)

TRACKING = ref(b"refs/remotes/origin/main")
SCHEMES = ("file", "ssh", "git+ssh", "http", "https", "git")
DEFAULT_TIMEOUT = 10.0
_FOLDER_RE = re.compile(r"[a-z0-9@_~-][a-z0-9@_~.-]{0,254}")
_FIELD_RE = re.compile(r"\{[^{}]*\}")


class TemplateError(ValueError):
    """``WIKIMEM_REMOTE`` is not a usable URL template."""


def _redact(url: str) -> str:
    """``url`` without a password (``https://user:secret@host`` → ``https://user:***@host``)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urlunsplit((parts.scheme, f"{parts.username}:***@{host}", parts.path, parts.query, parts.fragment))


def validate_template(template: str) -> str:
    """Return ``template`` if it is a usable ``WIKIMEM_REMOTE``, else raise :class:`TemplateError`."""
    if not isinstance(template, str) or not template.strip():
        raise TemplateError("WIKIMEM_REMOTE is empty")
    template = template.strip()
    fields = _FIELD_RE.findall(template)
    if not fields or any(f != "{owner}" for f in fields) or template.count("{") != len(fields):
        raise TemplateError(f"WIKIMEM_REMOTE must contain {{owner}} (and no other {{…}}): {_redact(template)!r}")
    sample = template.replace("{owner}", "owner")
    parts = urlsplit(sample)
    scheme = parts.scheme.lower()
    if not scheme:
        if not sample.startswith("/"):
            raise TemplateError(f"WIKIMEM_REMOTE must be a URL ({', '.join(SCHEMES)}) or an absolute path, "
                                f"not {_redact(template)!r} (write scp-like host:path as ssh://host/path)")
        return template
    if scheme not in SCHEMES:
        raise TemplateError(f"WIKIMEM_REMOTE scheme {scheme!r} is not one of {', '.join(SCHEMES)}")
    if parts.query or parts.fragment:
        raise TemplateError("WIKIMEM_REMOTE may not have a query or a fragment")
    if "{owner}" in urlsplit(template).netloc:
        raise TemplateError("{owner} must be in the path of WIKIMEM_REMOTE, not in the host")
    if scheme == "file":
        if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
            raise TemplateError(f"a file:// WIKIMEM_REMOTE needs an absolute path (file:///…): {template!r}")
    elif not parts.hostname:
        raise TemplateError(f"WIKIMEM_REMOTE has no host: {_redact(template)!r}")
    return template


def remote_url(template: str, folder: str) -> str:
    """The remote URL of the owner whose folder name is ``folder``."""
    if not isinstance(folder, str) or not _FOLDER_RE.fullmatch(folder) or folder in (".", ".."):
        raise ValueError(f"not an owner folder name: {folder!r}")
    return validate_template(template).replace("{owner}", folder)


def _hex(sha: bytes | None) -> str | None:
    return None if sha is None or sha == ZERO_SHA else sha.decode("ascii")


class Remote:
    """The remote repository of one owner, reached by ``url``."""

    def __init__(self, url: str, *, timeout: float = DEFAULT_TIMEOUT, ssh_command: str | None = None):
        self.url = url
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
        return _redact(self.url)

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
                self._client = SubprocessGitClient() if shutil.which("git") else LocalGitClient()
            elif self.scheme in ("http", "https"):
                base = urlunsplit((p.scheme, p.netloc.rsplit("@", 1)[-1], p.path, "", ""))
                self._client = HttpGitClient(base, username=p.username, password=p.password, timeout=self.timeout)
                # one connection attempt, no silent retries: a down remote must answer fast (503 + Retry-After)
                pool_kw = getattr(self._client.pool_manager, "connection_pool_kw", None)
                if pool_kw is not None:
                    pool_kw["retries"] = Retry(total=2, connect=0, read=0, status=0, redirect=2)
            elif not p.hostname:  # validate_template refuses these; a Remote built by hand skips it
                raise TemplateError(f"remote {self.shown!r} has no host")
            elif self.scheme == "git":
                self._client = TCPGitClient(p.hostname, p.port)
            else:
                self._client = SSHGitClient(p.hostname, p.port, username=p.username,
                                            ssh_command=self._ssh_command)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    @contextmanager
    def _talking(self, what: str) -> Iterator[None]:
        """Turn whatever the transport raises into the module's errors."""
        shown = self.shown
        if self.scheme == "file" and not Path(self.path).parent.is_dir():
            raise RemoteUnavailable(f"{what}: {Path(self.path).parent} does not exist (is the replica mounted?)",
                                    shown)
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
                    return _hex(_peek(target))
                finally:
                    target.close()
            # dulwich's GitClient.get_refs says bytes, yet every client encodes a str path itself (as since the start)
            refs = self.client().get_refs(self.path)  # type: ignore[arg-type]
            return _hex(_refs(refs).get(BRANCH))

    def create(self) -> bool:
        """Create the remote repository if this scheme allows it; True when it was created now."""
        if self.scheme == "file":
            folder = Path(self.path)
            if not folder.parent.is_dir():  # an unmounted replica disk must not become a folder on this one
                raise RemoteUnavailable(f"create: {folder.parent} does not exist (is the replica mounted?)",
                                        self.shown)
            return _init_bare(folder)
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
                found = _refs(self.client().get_refs(self.path))  # type: ignore[arg-type]
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
        with _opened(repo) as local, self._talking("fetch"):
            def wants(refs, depth=None, **_):
                found = _refs(refs)
                heads = [found.get(BRANCH)] + [v for k, v in found.items() if k.startswith(STAGED)]
                return list(dict.fromkeys(h for h in heads if h and h != ZERO_SHA and h not in local.object_store))

            result = self.client().fetch(self.path, local, determine_wants=wants)
            found = _refs(result.refs)
            head = found.get(BRANCH)
            if head is None or head == ZERO_SHA:
                set_tracking(local, None)
                return None
            self._check(local, head)
            before = staged_tips(local, TRACKED)
            set_tracking(local, head)
            follow_remote(local, self._staged(local, found, head), before)
            return head.decode("ascii")

    def _staged(self, local: Repo, found: dict, head: bytes) -> dict[str, bytes]:
        """The remote's staged branches (``refs/heads/staged/<run>``) whose new commits pass the same checks as
        ``main``'s; one that does not is left out (logged; it never reaches a ref here)."""
        out: dict[str, bytes] = {}
        for name, sha in found.items():
            if not name.startswith(STAGED) or not sha or sha == ZERO_SHA:
                continue
            try:
                run = validate_staged_run(name[len(STAGED):].decode("ascii"))
                check_incoming(local.object_store, sha, (head, _peek(local), _peek(local, TRACKING),
                                                         _peek(local, tracked_ref(run))), self.shown)
            except (UnicodeDecodeError, InvalidName, RemoteRefused) as exc:
                log.error("%s: refused the remote's %s from %s: %s", local.path, name.decode("ascii", "replace"),
                          self.shown, exc)
                continue
            out[run] = sha
        return out

    def _check(self, local: Repo, head: bytes) -> None:
        """The remote is untrusted input: every commit new to ``local`` is checked before a ref moves to it."""
        try:
            check_incoming(local.object_store, head, (_peek(local), _peek(local, TRACKING)), self.shown)
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
            current = _refs(refs).get(name)
            current = None if current == ZERO_SHA else current
            if current != old:  # abort before a byte of the pack is sent
                raise RemoteMoved(f"push: {self.shown} is at {_short(current)}, not {_short(old)}", self.shown,
                                  head=_hex(current), expected=expected)
            return {name: want}

        with _opened(repo) as local, self._talking("push"):
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
        return _hex(_refs(refs).get(name))

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
            current = _peek(target, name)
            if current != old:
                raise RemoteMoved(f"push: {self.shown} is at {_short(current)}, not {_short(old)}", self.shown,
                                  head=_hex(current), expected=expected)
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
            if not _locked_ref_update(update, lock):
                now = _peek(target, name)
                raise RemoteMoved(f"push: {self.shown} moved during the push", self.shown, head=_hex(now),
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
        with _opened(repo) as local, self._talking("replace"):
            have = [oid(old)] if old is not None and oid(old) in local.object_store else []
            if self.scheme == "file":
                target = Repo(self.path)
                try:
                    current = _peek(target)
                    if current != old:
                        raise RemoteMoved(f"replace: {self.shown} is at {_short(current)}, not {_short(old)}",
                                          self.shown, head=_hex(current), expected=expected)
                    target.object_store.add_pack_data(*local.object_store.generate_pack_data(have, [oid(want)]))
                    lock = Path(target.controldir()) / "refs" / "heads" / "main.lock"
                    if not _locked_ref_update(lambda: target.refs.set_if_equals(
                            BRANCH, None if old is None else oid(old), oid(want)), lock):
                        raise RemoteMoved(f"replace: {self.shown} moved meanwhile", self.shown,
                                          head=_hex(_peek(target)), expected=expected)
                finally:
                    target.close()
            else:
                def update_refs(refs):
                    current = _refs(refs).get(BRANCH)
                    current = None if current == ZERO_SHA else current
                    if current != old:
                        raise RemoteMoved(f"replace: {self.shown} is at {_short(current)}, not {_short(old)}",
                                          self.shown, head=_hex(current), expected=expected)
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

def new_objects(store, new: bytes, base: bytes | None) -> list:
    """The objects of the commits after ``base`` up to ``new``: commits plus the trees and blobs they changed.

    Our commits rebuild only the trees on changed paths, so the new objects of
    a commit are those of its tree that its parent's tree lacks; walking them
    costs what changed, not the size of the history (dulwich's generic
    ``generate_pack_data`` walks every tree of every common commit). With
    ``base`` None everything reachable from ``new`` is sent.
    """
    out: dict[bytes, object] = {}
    todo, seen = [new], {base}
    while todo:
        cid = todo.pop()
        if cid in seen:
            continue
        seen.add(cid)
        commit = store[cid]
        out[cid] = commit
        parents = list(commit.parents)
        parent_tree = store[parents[0]].tree if parents else None
        _new_tree_objects(store, commit.tree, parent_tree, out)
        todo.extend(parents)
        if not parents and base is not None:
            raise ValueError(f"{base.decode()} is not an ancestor of {new.decode()}: not a fast-forward")
    return list(out.values())


def _new_tree_objects(store, tree_id: bytes, old_id: bytes | None, out: dict) -> None:
    """Add ``tree_id`` and what under it is not in the tree ``old_id`` (same place, parent commit)."""
    if tree_id == old_id or tree_id in out:
        return
    tree = store[tree_id]
    out[tree_id] = tree
    old = {e.path: (e.mode, e.sha) for e in store[old_id].iteritems()} if old_id else {}
    for entry in tree.iteritems():
        before = old.get(entry.path)
        if (before and before[1] == entry.sha) or entry.sha in out or S_ISGITLINK(entry.mode):
            continue
        if stat.S_ISDIR(entry.mode):
            _new_tree_objects(store, entry.sha, before[1] if before and stat.S_ISDIR(before[0]) else None, out)
        else:
            out[entry.sha] = store[entry.sha]


# A ref lock older than this was left by a killed process (an update holds it for milliseconds).
STALE_LOCK_SECONDS = 10.0


def _locked_ref_update(update, lock: Path, attempts: int = 40):
    """Run a dulwich ref update; a ``.lock`` a killed writer left is removed once it is stale, a live one waited for."""
    from dulwich.file import FileLocked

    for _ in range(attempts):
        try:
            return update()
        except FileLocked:
            try:
                if time.time() - lock.stat().st_mtime > STALE_LOCK_SECONDS:
                    lock.unlink()
                    continue
            except FileNotFoundError:
                continue
            time.sleep(0.05)
    raise RemoteUnavailable(f"{lock} stays locked", "")


def set_tracking(repo: Repo, value: bytes | None, name=TRACKING) -> None:
    """Set (None: remove) a remote-tracking ref (``main``'s by default); best effort, as it is only what this
    folder knows.

    A tracking ref left behind is safe: the next push meets the remote at a
    commit it already holds and moves the ref then (see ``Replica.push``).
    """
    lock = Path(repo.controldir()) / name.decode()
    lock = lock.with_name(lock.name + ".lock")
    try:
        if value is None:
            _locked_ref_update(lambda: repo.refs.remove_if_equals(name, None), lock)
        else:
            _locked_ref_update(lambda: repo.refs.__setitem__(name, oid(value)), lock)
    except (RemoteUnavailable, OSError):
        pass


def _peek(repo: Repo, name=BRANCH) -> bytes | None:
    try:
        return repo.refs[name]
    except KeyError:
        return None


def _refs(refs) -> dict:
    """A plain dict of refs (dulwich returns a dict, or an LsRemoteResult/FetchPackResult wrapping one)."""
    inner = getattr(refs, "refs", refs)
    return dict(inner or {})


def _short(sha: bytes | None) -> str:
    return "nothing" if not sha else sha.decode("ascii")[:12]


def _text(exc: BaseException) -> str:
    lines = getattr(exc, "stderr_lines", None)
    if lines:
        return " ".join(x.decode("utf-8", "replace").strip() for x in lines)[-500:]
    parts = [a.decode("utf-8", "replace") if isinstance(a, bytes) else str(a) for a in exc.args]
    return " ".join(parts)[-500:] or type(exc).__name__


@contextmanager
def _opened(repo: Path | str | Repo) -> Iterator[Repo]:
    if isinstance(repo, Repo):
        yield repo
        return
    local = Repo(str(repo))
    try:
        yield local
    finally:
        local.close()


def _init_bare(path: Path) -> bool:
    """A bare repository with ``main`` as HEAD and fsck on receive (for git servers that serve it later)."""
    if (path / "HEAD").exists():
        return False
    path.mkdir(exist_ok=True)
    init_repo(path, bare=True).close()
    return True
