"""Query vectors remembered per owner and within one retrieve (issue 39): the same vectors, fewer model calls."""

from __future__ import annotations

import threading

import numpy as np
from fakes import fake_embedding

from wikimem.context import WriteContext
from wikimem.host import make_host
from wikimem.vectors import RememberedQueries, one_retrieve


class Counting:
    """An asymmetric embedder that counts its query calls (texts asked, per thread)."""

    model = "fake-embed"
    dim = 32

    def __init__(self):
        self.queries: list[str] = []
        self.lock = threading.Lock()

    def embed(self, texts):
        return np.array([fake_embedding("p " + t, 32) for t in texts], np.float32)

    def embed_query(self, texts):
        with self.lock:
            self.queries += texts
        return np.array([fake_embedding(t, 32) for t in texts], np.float32)


def test_a_remembered_vector_is_the_embedders_own_and_asked_once():
    inner = Counting()
    q = RememberedQueries(inner, kept=2)
    first = q.embed_query(["tea"])
    again = q.embed_query(["tea"])
    assert inner.queries == ["tea"]
    assert again.tobytes() == first.tobytes() == inner.embed_query(["tea"]).tobytes()
    assert q.model == "fake-embed" and q.dim == 32  # the wrapped embedder's attributes
    assert q.embed(["tea"]).tobytes() == inner.embed(["tea"]).tobytes()  # passages pass through, never kept
    q.embed_query(["coffee"])
    q.embed_query(["milk"])  # two kept: "tea" is the oldest and goes
    inner.queries.clear()
    q.embed_query(["tea"])
    q.embed_query(["milk"])
    assert inner.queries == ["tea"]
    answer = q.embed_query(["milk"])
    answer[0][0] = 9.0  # a caller changing its answer changes nobody else's
    assert q.embed_query(["milk"]).tobytes() == inner.embed_query(["milk"]).tobytes()


def test_one_retrieve_shares_a_vector_across_owners_only_while_it_runs():
    inner = Counting()
    ann, bob = RememberedQueries(inner), RememberedQueries(inner)
    with one_retrieve():
        ann.embed_query(["surfing"])
        bob.embed_query(["surfing"])  # (a character's profile lives in another owner)
    assert inner.queries == ["surfing"]
    bob.embed_query(["sailing"])
    ann.embed_query(["sailing"])  # outside a retrieve, owners keep their own: no hint of what another asked
    assert inner.queries == ["surfing", "sailing", "sailing"]


def _ann_with_kai(tmp_path, inner):
    """Ann's folder with a shared item and one in Kai's layer, and Kai's profile (another owner)."""
    host = make_host(tmp_path, embedder=inner)
    host.characters.put("kai", name="Kai", persona="A barista.")
    host.owner("char:kai").add("self", "who", "Kai works at the harbour café.", ctx=WriteContext(actor="seed"))
    owner, _ = host.ensure_owner("user:ann")
    owner.add("people", "ann", "Ann lives by the sea and surfs.", ctx=WriteContext(actor="seed"))
    owner.add("notes", "surf", "Ann told Kai about surfing lessons.", ctx=WriteContext(actor="kai"), character="kai")
    return owner


def test_a_characters_retrieve_embeds_the_query_once(tmp_path):
    inner = Counting()
    owner = _ann_with_kai(tmp_path, inner)
    plain = owner.retrieve("who surfs by the sea?", character="kai")
    asked = [t for t in inner.queries if "surfs by the sea" in t]
    assert len(asked) == 1, asked  # three sources (Kai's layer, the shared layer, Kai's profile), one embedding
    again = owner.retrieve("who surfs by the sea?", character="kai")
    assert [t for t in inner.queries if "surfs by the sea" in t] == asked
    assert [(e.item.file, e.item.name, e.score) for e in again.items] == [
        (e.item.file, e.item.name, e.score) for e in plain.items]


def test_a_vector_one_index_remembers_serves_the_characters_profile_in_the_same_retrieve(tmp_path):
    """Several characters answer one message (a group chat): the shared retrieve embeds the text, and a retrieve as
    a character right after reads three sources — two of this owner's, which remember the vector, and the
    character's profile, another owner, which gets it from the retrieve it runs in: no second embedding."""
    inner = Counting()
    owner = _ann_with_kai(tmp_path, inner)
    text = "who works at the harbour?"
    shared = owner.retrieve(text)
    assert shared.embedding_used and inner.queries.count(text) == 1
    as_kai = owner.retrieve(text, character="kai")
    assert as_kai.embedding_used
    assert inner.queries.count(text) == 1, inner.queries
    # the same answer as a retrieve that embedded the text itself (a new host: nothing remembered)
    fresh = make_host(tmp_path, embedder=Counting()).owner("user:ann").retrieve(text, character="kai")
    assert [(e.item.file, e.item.name, e.score) for e in as_kai.items] == [
        (e.item.file, e.item.name, e.score) for e in fresh.items]
