"""The replication transport (wikimem.versioned.replication.remote) against real git servers on 127.0.0.1.

Every case runs over a ``file://`` remote, smart HTTP (nginx + fcgiwrap +
``git http-backend``, ``receive.fsckObjects=true``) and ``git daemon``.
The ``git`` command line is the independent witness: what the server holds
(``git rev-list``) and whether it is sound (``git fsck --strict``).
"""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

import pytest
from engines import GitHttpServer, bare_repo, free_port  # noqa: E402

from wikimem.versioned import VersionedStore
from wikimem.versioned.replication import (
    TRACKING,
    Remote,
    RemoteMissing,
    RemoteMoved,
    RemoteRejected,
    RemoteUnavailable,
    TemplateError,
    remote_url,
    validate_template,
)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


def fsck(repo: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(repo), "fsck", "--strict", "--no-progress"], capture_output=True,
                          text=True)


def server_main(bare: Path) -> str:
    return git(bare, "rev-parse", "refs/heads/main")


def linear(bare: Path) -> bool:
    """Every commit on main has at most one parent, and main is one chain."""
    return all(len(line.split()) <= 2 for line in git(bare, "rev-list", "--parents", "main").splitlines())


@pytest.fixture
def writer(tmp_path):
    vs = VersionedStore(tmp_path / "writer", auto_pack=False)
    yield vs
    vs.close()


def published(remote_kind, writer) -> tuple[Remote, Path]:
    """A fresh remote holding the writer's first commits."""
    url, bare = remote_kind.new()
    remote = Remote(url)
    remote.create()
    writer.add("preferences", "sea", "她喜欢大海 and the sea at dawn.")
    remote.push(writer.root, writer.head(), None)
    return remote, bare


# -- the URL template ---------------------------------------------------------------

@pytest.mark.parametrize("template", [
    "ssh://git@backup/wikimem/{owner}.git",
    "ssh://git@backup:2222/~/wikimem/{owner}.git",
    "git+ssh://backup/srv/{owner}.git",
    "https://git.example/wikimem/{owner}.git",
    "https://bot:s3cret@git.example/wikimem/{owner}.git",
    "http://127.0.0.1:8080/{owner}.git",
    "git://127.0.0.1/{owner}.git",
    "file:///mnt/replica/{owner}.git",
    "/mnt/replica/{owner}.git",
])
def test_valid_templates_are_accepted(template):
    assert validate_template(template) == template


@pytest.mark.parametrize("template, reason", [
    ("", "empty"),
    ("https://git.example/wikimem/repo.git", "{owner}"),
    ("https://git.example/{owner}/{user}.git", "{owner}"),
    ("https://git.example/{owner.git", "{owner}"),
    ("ftp://git.example/{owner}.git", "scheme"),
    ("git@backup:wikimem/{owner}.git", "ssh://"),
    ("relative/{owner}.git", "absolute"),
    ("https://{owner}.example/x.git", "path"),
    ("https:///{owner}.git", "no host"),
    ("file://server/{owner}.git", "absolute path"),
    ("https://git.example/{owner}.git?x=1", "query"),
])
def test_invalid_templates_are_refused_with_the_reason(template, reason):
    with pytest.raises(TemplateError, match=reason.replace("{", r"\{").replace("}", r"\}")):
        validate_template(template)


def test_a_password_in_the_template_never_shows_in_messages():
    with pytest.raises(TemplateError) as info:
        validate_template("https://bot:s3cret@git.example/wikimem/{owner}.git?x")
    assert "s3cret" not in str(info.value)
    remote = Remote("https://bot:s3cret@127.0.0.1:1/x.git", timeout=1)
    assert "s3cret" not in repr(remote) and "***" in remote.shown
    with pytest.raises(RemoteUnavailable) as down:
        remote.remote_head()
    assert "s3cret" not in str(down.value)


@pytest.mark.parametrize("folder", ["", ".", "..", "a/b", "../x", "User", "a b", "x\n"])
def test_remote_url_refuses_what_is_not_an_owner_folder(folder):
    with pytest.raises(ValueError):
        remote_url("file:///r/{owner}.git", folder)


def test_remote_url_fills_every_owner_field():
    assert remote_url("ssh://h/{owner}/{owner}.git", "user_3axnne") == "ssh://h/user_3axnne/user_3axnne.git"


# -- push, fetch, clone -----------------------------------------------------------------

def test_push_from_empty_then_clone_round_trips(remote_kind, writer, tmp_path):
    remote, bare = published(remote_kind, writer)
    writer.diary_append("在海边散步。", date="2026-07-21", time="09:15")
    before = remote.remote_head()
    remote.push(writer.root, writer.head(), before)
    assert remote.remote_head() == writer.head() == server_main(bare)
    clone = tmp_path / "clone"
    assert remote.clone(clone) == writer.head()
    for path in ("wiki/preferences.md", "diary/2026-07-21.md", ".gitignore"):
        assert (clone / path).read_bytes() == (writer.root / path).read_bytes()
    assert git(clone, "status", "--porcelain") == ""  # the checkout matches its index
    reopened = VersionedStore(clone)
    assert reopened.store.get("preferences", "sea").content == "她喜欢大海 and the sea at dawn."
    reopened.close()
    assert fsck(bare).returncode == 0, fsck(bare).stderr


def test_fetch_brings_new_commits_and_the_tracking_ref(remote_kind, writer, tmp_path):
    remote, bare = published(remote_kind, writer)
    clone = tmp_path / "clone"
    remote.clone(clone)
    for i in range(3):
        before = writer.head()
        writer.add("notes", f"n{i}", f"note {i}")
        remote.push(writer.root, writer.head(), before)
    assert remote.fetch(clone) == writer.head()
    assert git(clone, "rev-parse", TRACKING.decode()) == writer.head()
    assert git(clone, "rev-parse", "main") != writer.head()  # fetch never moves the local branch
    assert git(clone, "cat-file", "-p", f"{writer.head()}:wiki/notes.md").count("## n") == 3
    assert fsck(clone).returncode == 0


def test_a_push_behind_by_many_commits_sends_all_of_them(remote_kind, writer):
    remote, bare = published(remote_kind, writer)
    start = remote.remote_head()
    for i in range(12):
        writer.add(f"file{i % 3}", f"item{i}", f"memory {i}")
        if i == 5:
            writer.remove("file0", "item0")
    writer.add("preferences", "sea", "她喜欢大海 and the sea at dawn.")  # a blob the remote already has
    remote.push(writer.root, writer.head(), start)
    assert server_main(bare) == writer.head()
    assert git(bare, "rev-list", "--count", "main") == git(writer.root, "rev-list", "--count", "main")
    assert fsck(bare).returncode == 0, fsck(bare).stderr


# -- compare-and-swap --------------------------------------------------------------------

def test_two_clones_racing_one_wins_the_other_is_told_the_new_head(remote_kind, writer, tmp_path):
    remote, bare = published(remote_kind, writer)
    start = remote.remote_head()
    other_root = tmp_path / "other"
    remote.clone(other_root)
    other = VersionedStore(other_root)
    writer.add("preferences", "tea", "green tea")
    other.add("preferences", "coffee", "black coffee")
    remote.push(writer.root, writer.head(), start)
    with pytest.raises(RemoteMoved) as info:
        remote.push(other.root, other.head(), start)
    assert info.value.head == writer.head() and info.value.expected == start
    assert server_main(bare) == writer.head()  # never overwritten
    assert git(other_root, "rev-parse", TRACKING.decode()) == start  # the loser's view is unchanged
    other.close()
    assert linear(bare) and fsck(bare).returncode == 0


def test_a_push_whose_remote_moved_after_the_advertisement_is_refused_by_the_server(remote_kind, writer, tmp_path,
                                                                                  monkeypatch):
    """The race inside one push: main moves between the ref advertisement and the update.

    The client's own check passes (the advertised value is the expected one);
    git's receive-pack (file://: the ref lock taken in-process) then compares
    the old value under its ref lock and refuses, and the caller gets
    RemoteMoved, not an overwrite.
    """
    remote, bare = published(remote_kind, writer)
    start = remote.remote_head()
    racer_root = tmp_path / "racer"
    Remote(remote.url).clone(racer_root)
    racer = VersionedStore(racer_root)
    racer.add("preferences", "rain", "rainy mornings")
    writer.add("preferences", "tea", "green tea")
    client = remote.client()
    real_send_pack = client.send_pack

    def send_pack_with_a_racer(path, update_refs, generate_pack_data, **kw):
        def racing_update_refs(refs):
            changes = update_refs(refs)  # the CAS check on the advertised refs: passes
            Remote(remote.url).push(racer.root, racer.head(), start)  # ...and now main moves
            return changes

        return real_send_pack(path, racing_update_refs, generate_pack_data, **kw)

    client.send_pack = send_pack_with_a_racer
    if remote_kind.name == "file":  # no advertisement: the race is between reading main and locking it
        import wikimem.versioned.replication.remote as transport

        real_new_objects = transport.new_objects
        raced = []

        def new_objects_with_a_racer(*args):
            found = real_new_objects(*args)
            if not raced:
                raced.append(True)
                Remote(remote.url).push(racer.root, racer.head(), start)
            return found

        monkeypatch.setattr(transport, "new_objects", new_objects_with_a_racer)
    with pytest.raises(RemoteMoved) as info:
        remote.push(writer.root, writer.head(), start)
    assert info.value.head == racer.head()
    assert server_main(bare) == racer.head()
    racer.close()
    assert linear(bare) and fsck(bare).returncode == 0


def test_a_push_that_is_not_a_fast_forward_is_refused_before_sending(remote_kind, writer, tmp_path):
    remote, _ = published(remote_kind, writer)
    unrelated = VersionedStore(tmp_path / "unrelated")
    unrelated.add("x", "y", "z")
    with pytest.raises(ValueError, match="fast-forward"):
        remote.push(unrelated.root, unrelated.head(), remote.remote_head())
    unrelated.close()


# -- errors ------------------------------------------------------------------------------------

def test_an_unreachable_remote_is_a_retriable_error(writer):
    writer.add("a", "b", "c")
    port = free_port()  # nothing listens there
    for url in (f"http://127.0.0.1:{port}/x.git", f"git://127.0.0.1:{port}/x.git"):
        remote = Remote(url, timeout=2)
        with pytest.raises(RemoteUnavailable) as info:
            remote.remote_head()
        assert info.value.retry_after > 0 and info.value.url == url
        with pytest.raises(RemoteUnavailable):
            remote.push(writer.root, writer.head(), None)


def test_a_server_that_dies_mid_life_turns_into_unavailable_then_recovers(tmp_path, writer):
    server = GitHttpServer(tmp_path / "srv")
    try:
        server.start()
        url = f"{server.url}/owner.git"
        remote = Remote(url)
        writer.add("a", "b", "c")
        remote.push(writer.root, writer.head(), None)
        before = writer.head()
        writer.add("a", "d", "e")
        server.stop()
        with pytest.raises(RemoteUnavailable):
            remote.push(writer.root, writer.head(), before)
        server.start()  # same port
        remote.push(writer.root, writer.head(), before)  # the same push, once it is back
        assert server_main(server.repo("owner")) == writer.head()
    finally:
        server.stop()


def test_a_missing_repository_is_reported_as_missing(tmp_path, git_daemon, git_http):
    for url in (f"file://{tmp_path}/nothing.git", f"{git_daemon.url}/nothing.git", f"{git_http.url}/nothing.git"):
        with pytest.raises(RemoteMissing):
            Remote(url).remote_head()


def test_create_makes_a_bare_repository_for_file_remotes_only_once(tmp_path):
    remote = Remote(f"file://{tmp_path}/r/owner.git")
    with pytest.raises(RemoteUnavailable, match="mounted"):  # the replica folder itself is never made
        remote.create()
    (tmp_path / "r").mkdir()
    assert remote.create() is True and remote.create() is False
    assert git(tmp_path / "r" / "owner.git", "rev-parse", "--is-bare-repository") == "true"
    assert git(tmp_path / "r" / "owner.git", "symbolic-ref", "HEAD") == "refs/heads/main"
    assert remote.remote_head() is None
    assert Remote("http://127.0.0.1:1/x.git").create() is False  # http cannot: push-to-create or by hand


def test_the_server_refuses_a_broken_object_and_nothing_moves(git_http, git_daemon, writer, tmp_path):
    """receive.fsckObjects=true on the servers (and in file remotes made by create()): a bad commit is refused."""
    from dulwich.objects import Commit, ShaFile

    writer.add("a", "b", "c")
    start = writer.head()
    for url, bare in ((f"{git_http.url}/fsck.git", git_http.repo("fsck")),
                      (f"{git_daemon.url}/fsck.git", bare_repo(git_daemon.repo("fsck"))),
                      (f"file://{tmp_path}/fsck.git", tmp_path / "fsck.git")):
        remote = Remote(url)
        remote.create()
        remote.push(writer.root, start, None)
        tree = writer.git.commit(start.encode()).tree
        raw = (b"tree " + tree + b"\nparent " + start.encode() + b"\nauthor no email 1700000000 +0000\n"
               b"committer no email 1700000000 +0000\n\nbroken\n")
        bad = ShaFile.from_raw_string(Commit.type_num, raw)
        writer.git.store.add_object(bad)
        # git daemon's receive-pack may hang up before its refusal is read (the client then sees the connection
        # closed): over git:// either error, never a moved branch
        refused = (RemoteRejected, RemoteUnavailable) if url.startswith("git://") else RemoteRejected
        with pytest.raises(refused):
            remote.push(writer.root, bad.id.decode(), start)
        assert server_main(bare) == start
        assert fsck(bare).returncode == 0


def test_ssh_remote_creates_pushes_and_fetches_through_the_ssh_command(tmp_path, writer, monkeypatch):
    """ssh:// URLs: ``git init --bare`` and the pack protocol through the configured ssh command.

    The ssh command here is a stand-in for ``ssh`` that runs the remote command
    on this machine (what git's own test suite does); the git programs on the
    far side and the protocol over the pipe are the real ones.
    """
    shim = tmp_path / "fake-ssh"
    shim.write_text(textwrap.dedent("""\
        #!/bin/sh
        # drop ssh's options and the host, run the remote command here
        while [ $# -gt 1 ]; do
          case "$1" in
            -p|-l|-o|-i) shift 2 ;;
            -*) shift ;;
            *) shift; break ;;
          esac
        done
        echo "$@" >> "$(dirname "$0")/ssh.log"
        exec sh -c "$*"
        """))
    shim.chmod(0o755)
    remote = Remote(f"ssh://git@backup.invalid:2222{tmp_path}/srv/owner.git", ssh_command=str(shim))
    assert remote.create() is True and remote.create() is False
    writer.add("a", "b", "c")
    remote.push(writer.root, writer.head(), None)
    assert server_main(tmp_path / "srv" / "owner.git") == writer.head() == remote.remote_head()
    clone = tmp_path / "clone"
    assert remote.clone(clone) == writer.head()
    log = (tmp_path / "ssh.log").read_text()
    assert "git init" in log and "git-receive-pack" in log and "git-upload-pack" in log
    assert os.path.exists(clone / "wiki" / "a.md")
