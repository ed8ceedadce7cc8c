"""The ranking slots (wikimem/host/admission.py): a few retrieves rank at once, the rest in arrival order."""

from __future__ import annotations

import threading
import time

import pytest

from wikimem.host.admission import UNLIMITED, RankingSlots


def _wait(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.001)


@pytest.mark.parametrize("size", [-1, 1.5, True, "2"])
def test_a_size_that_is_not_a_count_is_refused(size):
    with pytest.raises(ValueError, match="size"):
        RankingSlots(size)


def test_no_gate_never_waits_nor_counts():
    inside = threading.Barrier(20, timeout=10)  # twenty threads inside at once: would time out behind any limit
    threads = [threading.Thread(target=lambda: _held(UNLIMITED, inside)) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not inside.broken and UNLIMITED.waiting == 0


def _held(gate: RankingSlots, inside: threading.Barrier) -> None:
    with gate.hold():
        inside.wait()


@pytest.mark.parametrize("size", [1, 2])
def test_at_most_size_inside_and_the_rest_admitted_in_arrival_order(size):
    gate = RankingSlots(size)
    lock, now, most, order = threading.Lock(), [0], [0], []
    go = threading.Event()

    def worker(i: int) -> None:
        with gate.hold():
            with lock:
                now[0] += 1
                most[0] = max(most[0], now[0])
                order.append(i)
            go.wait(10)
            with lock:
                now[0] -= 1

    first = [threading.Thread(target=worker, args=(i,)) for i in range(size)]
    for t in first:
        t.start()
    _wait(lambda: len(order) == size)
    rest = []
    for i in range(size, 12):  # queued one after the other: each is in line before the next starts
        t = threading.Thread(target=worker, args=(i,))
        t.start()
        rest.append(t)
        _wait(lambda i=i: gate.waiting == i - size + 1)
    go.set()
    for t in first + rest:
        t.join(10)
    assert most[0] == size
    if size == 1:  # first come, first served (with two places, who notes itself first is the threads' race)
        assert order == list(range(12))
    assert sorted(order) == list(range(12)) and gate.waiting == 0


def test_a_hold_within_a_hold_is_the_same_place():
    gate = RankingSlots(1)
    with gate.hold() as waited:
        with gate.hold() as again:  # would wait for itself forever with a plain semaphore
            assert again == 0.0
        assert waited == 0.0
    done = threading.Event()
    threading.Thread(target=lambda: (gate.hold().__enter__(), done.set())).start()
    assert done.wait(10)  # the place was given back once, at the outer end


def test_released_lets_the_next_in_and_comes_back_in_line():
    gate = RankingSlots(1)
    entered, leave = threading.Event(), threading.Event()
    log = []

    def other() -> None:
        with gate.hold() as waited:
            log.append(("other in", waited > 0))
            entered.set()
            leave.wait(10)
        log.append("other out")

    with gate.hold():
        t = threading.Thread(target=other)
        t.start()
        _wait(lambda: gate.waiting == 1)
        with gate.released():  # (a query being embedded): the one in line goes in meanwhile
            assert entered.wait(10)
            leave.set()
        log.append("back")  # only once the other has left its place
        t.join(10)
    assert log == [("other in", True), "other out", "back"]


def test_released_outside_a_hold_changes_nothing():
    gate = RankingSlots(1)
    with gate.released():
        with gate.hold() as waited:
            assert waited == 0.0
    with gate.hold():
        pass


def test_an_embedder_lets_its_place_go_only_while_it_runs():
    gate = RankingSlots(1)
    seen = []

    def another_gets_in() -> bool:
        got = threading.Event()
        t = threading.Thread(target=lambda: _enter_once(gate, got))
        t.start()
        t.join(2)
        return got.is_set()

    class Model:  # the embedder's interface, observed from inside its call
        dim = 3

        def embed(self, texts):
            seen.append(("embed", another_gets_in()))
            return [[0.0, 0.0, 1.0] for _ in texts]

        def embed_query(self, texts):
            seen.append(("query", another_gets_in()))
            return [[1.0, 0.0, 0.0] for _ in texts]

    wrapped = gate.embedder(Model())
    model = Model()
    assert wrapped.dim == 3 and gate.embedder(None) is None and UNLIMITED.embedder(model) is model
    with gate.hold():
        assert wrapped.embed_query(["q"]) == [[1.0, 0.0, 0.0]]
        assert not another_gets_in()  # held again after the call
    assert wrapped.embed(["p"]) == [[0.0, 0.0, 1.0]]  # (a thread holding no place: nothing to give)
    assert seen == [("query", True), ("embed", True)]


def _enter_once(gate: RankingSlots, got: threading.Event) -> None:
    with gate.hold():
        got.set()


def test_an_exception_inside_gives_the_place_back():
    gate = RankingSlots(1)
    with pytest.raises(RuntimeError):
        with gate.hold():
            raise RuntimeError("ranking failed")
    with pytest.raises(RuntimeError):
        with gate.hold():
            with gate.released():
                raise RuntimeError("the endpoint failed")
    done = threading.Event()
    threading.Thread(target=lambda: (gate.hold().__enter__(), done.set())).start()
    assert done.wait(10)
