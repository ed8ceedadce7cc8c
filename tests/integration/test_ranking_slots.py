"""Retrieves ranked a few at a time per process (WIKIMEM_RANKING_SLOTS, wikimem/host/admission.py).

With one place, a retrieve whose query waits on a slow embedding endpoint (a
real HTTP server on 127.0.0.1) must not hold another owner's retrieve back:
the place is let go while the endpoint answers. The answers are those of a
host without the gate, and the wait is reported as the ``queued`` phase.
"""

from __future__ import annotations

import threading

from fakes import FakeOpenAI

from wikimem.host import make_host
from wikimem.host.metrics import Metrics
from wikimem.vectors import HttpEmbedder

HELD = "what did the slow endpoint say"


def _host(root, fake, slots, **kwargs):
    return make_host(root, embedder=HttpEmbedder(fake.url, "fake-embed", timeout=30), ranking_slots=slots,
                     **kwargs)


def _fill(host) -> None:
    for owner_id in ("user:a", "user:b"):
        owner = host.create_owner(owner_id)
        owner.add("people", "mia", "Mia likes green tea and hikes on Sundays.")
        owner.add("people", "tom", "Tom plays the fiddle at the library.")
        owner.retrieve("warm up")  # (every passage embedded: the retrieves below embed their query only)


def test_a_query_waiting_on_the_endpoint_lets_another_retrieve_rank(tmp_path):
    release = threading.Event()
    with FakeOpenAI() as fake:
        def hold_one(path, body):
            if isinstance(body, dict) and body.get("input") in ([f"{HELD}"], HELD):
                release.wait(30)
            return None

        host = _host(tmp_path / "data", fake, 1)
        _fill(host)
        fake.respond_with = hold_one
        slow = threading.Thread(target=lambda: host.owner("user:a").retrieve(HELD))
        slow.start()
        try:
            fake_wait = threading.Event()
            for _ in range(300):  # until the slow query is at the endpoint (inside its retrieve's place)
                if any(r.body and r.body.get("input") in ([HELD], HELD) for r in list(fake.requests)):
                    fake_wait.set()
                    break
                threading.Event().wait(0.01)
            assert fake_wait.is_set()
            done = []
            other = threading.Thread(target=lambda: done.append(host.owner("user:b").retrieve("who plays the fiddle")))
            other.start()
            other.join(10)
            assert done and done[0].items[0].item.name == "tom"  # ranked while the first still waits on the endpoint
            assert slow.is_alive()
        finally:
            release.set()
            slow.join(30)
        assert not slow.is_alive()


def test_answers_are_the_same_with_one_place_and_without_a_gate_under_threads(tmp_path):
    queries = ["who likes tea", "fiddle at the library", "Sunday hikes", "green tea", "who plays music"]
    with FakeOpenAI() as fake:
        free = _host(tmp_path / "free", fake, 0)
        metrics = Metrics()
        gated = _host(tmp_path / "gated", fake, 1, metrics=metrics)
        _fill(free)
        _fill(gated)
        want = {q: free.owner("user:a").retrieve(q).to_dict()["items"] for q in queries}
        got: dict[str, list] = {}
        errors = []

        def ask(q: str) -> None:
            try:
                for _ in range(5):
                    got.setdefault(q, []).append(gated.owner("user:a").retrieve(q).to_dict()["items"])
            except Exception as exc:  # noqa: BLE001 (reported below)
                errors.append(exc)

        threads = [threading.Thread(target=ask, args=(q,)) for q in queries]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors
        assert all(answers == [want[q]] * 5 for q, answers in got.items()) and len(got) == len(queries)
        exposition = metrics.exposition().decode()
        assert 'wikimem_retrieve_duration_seconds_count{phase="queued"}' in exposition
