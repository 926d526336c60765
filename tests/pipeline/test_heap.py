"""The cycle collector's policy for long-running processes (pipeline/heap.py)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from pipeline import heap


@pytest.fixture
def restored() -> Iterator[None]:
    """The suite's own collector state back after the test."""
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


def test_settle_freezes_what_lives_and_makes_young_collections_rarer(restored: None) -> None:
    gc.set_threshold(700, 10, 10)
    kept = [[i] for i in range(1000)]  # built once, kept for the process's life
    heap.settle()
    assert gc.get_freeze_count() >= len(kept)
    assert gc.get_threshold() == (heap.YOUNG_THRESHOLD, 10, 10)
    # again: what was added since is frozen too, and a higher threshold set by hand stays
    gc.set_threshold(10 * heap.YOUNG_THRESHOLD, 10, 10)
    before = gc.get_freeze_count()
    more = [[i] for i in range(1000)]  # lists are always tracked
    heap.settle()
    assert gc.get_freeze_count() >= before + len(more)
    assert gc.get_threshold()[0] == 10 * heap.YOUNG_THRESHOLD


def test_cycles_made_after_settle_are_still_collected(restored: None) -> None:
    heap.settle()

    class Node:
        other: object = None

    a, b = Node(), Node()
    a.other, b.other = b, a
    del a, b
    assert gc.collect() >= 2
