"""A process holding more than 1024 files open still pushes to and fetches from every kind of remote.

The file:// case through the app is tests/integration/test_remote_many_files.py. Here the versioned store itself
against file://, smart HTTP (nginx + git http-backend) and git daemon: dulwich's git:// client asked select(2)
whether the socket had bytes, and failed once its descriptor passed FD_SETSIZE (a CI run met it at 1026).
"""

from __future__ import annotations

from manyfiles import many_open_files, next_descriptor

from wikimem.context import WriteContext


def test_a_store_past_a_thousand_open_files_pushes_and_fetches(remote_kind, tmp_path):
    from wikimem.versioned import Replica, VersionedStore
    from wikimem.versioned.replication import Remote

    url, _ = remote_kind.new()
    Remote(url).create()
    with many_open_files():
        assert next_descriptor() > 1024  # every socket, pipe and pack the transfer opens is past FD_SETSIZE
        a = VersionedStore(tmp_path / "a", auto_pack=False)
        a.replica = Replica(Remote(url))
        a.add("preferences", "tea", "Drinks green tea.", ctx=WriteContext(actor="a"))
        Remote(url).clone(tmp_path / "b")
        b = VersionedStore(tmp_path / "b", auto_pack=False)
        b.replica = Replica(Remote(url))
        assert b.store.get("preferences", "tea").content == "Drinks green tea."
        a.add("preferences", "coffee", "Never after noon.", ctx=WriteContext(actor="a"))
        b.replica.fetch(b.git)
        b.catch_up(fetch=False)
        assert b.store.get("preferences", "coffee").content == "Never after noon."
