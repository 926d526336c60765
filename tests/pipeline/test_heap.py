"""The cycle collector's policy for long-running processes (pipeline/heap.py)."""

from __future__ import annotations

import gc
import subprocess
import sys
from collections.abc import Iterator

import pytest

from pipeline import heap


@pytest.fixture
def restored() -> Iterator[None]:
    """The suite's own collector state (and the process's opt-out) back after the test."""
    threshold = gc.get_threshold()
    enabled = heap._Policy.enabled
    yield
    heap._Policy.enabled = enabled
    gc.unfreeze()
    gc.set_threshold(*threshold)


def test_a_process_that_did_not_opt_in_keeps_cpythons_policy(restored: None) -> None:
    heap._Policy.enabled = False
    gc.set_threshold(700, 10, 10)
    kept = [[i] for i in range(1000)]
    heap.settle()
    assert _watched(kept)
    assert gc.get_threshold() == (700, 10, 10)


def _watched(objects: list[list[int]]) -> bool:
    """Whether the collector still walks any of ``objects`` (the frozen are in none of its
    generations)."""
    ids = {id(o) for o in objects}
    return any(id(o) in ids for o in gc.get_objects())


def test_settle_freezes_what_lives_and_makes_young_collections_rarer(restored: None) -> None:
    heap.enable()
    gc.set_threshold(700, 10, 10)
    # built once, kept for the process's life (lists are always tracked)
    kept = [[i] for i in range(1000)]
    assert _watched(kept)
    heap.settle()
    assert not _watched(kept)
    assert gc.get_threshold() == (heap.YOUNG_THRESHOLD, 10, 10)
    # again: what was added since is frozen too, and a higher threshold set by hand stays
    gc.set_threshold(10 * heap.YOUNG_THRESHOLD, 10, 10)
    more = [[i] for i in range(1000)]
    assert _watched(more)
    heap.settle()
    assert not _watched(more)
    assert gc.get_threshold()[0] == 10 * heap.YOUNG_THRESHOLD


def test_cycles_made_after_settle_are_still_collected(restored: None) -> None:
    heap.enable()
    heap.settle()

    class Node:
        other: object = None

    a, b = Node(), Node()
    a.other, b.other = b, a
    del a, b
    assert gc.collect() >= 2


def test_at_exit_the_frozen_objects_are_finalised_in_the_usual_order() -> None:
    # a cycle alive when the process settles, with a finaliser (as a native library's handle
    # has): without the exit hook it stays frozen and is never finalised
    script = (
        "import gc, sys\n"
        "from pipeline import heap\n"
        "class Handle:\n"
        "    def __del__(self):\n"
        "        sys.stdout.write('finalised\\n')\n"
        "h = Handle(); h.me = h\n"
        "heap.enable(); heap.settle()\n"
        "del h\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60, check=True)
    assert out.stdout == "finalised\n"
