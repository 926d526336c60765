"""How a long-running rocewatch process keeps CPython's cycle collector off its hot path.

A role's loop allocates and drops thousands of small containers every step (alerts and their
evidence, label dicts, lists of symptoms); reference counting frees them, and the cycle
collector has only cycles to find. CPython's default policy runs a young collection every 700
net allocations and a full one every hundred of those, and a full collection walks every tracked
object the process holds: the topology, the series and port indices, the loaded modules and,
in the detect role, thousands of active alerts. Measured on the detection chain at one zone,
collections were about a fifth of its CPU (docs/benchmarks.md).

:func:`settle` is called once a loop has built what it keeps for the process's life: what is
alive then moves to the permanent generation (``gc.freeze``: never walked again, never freed
unless the process unfreezes), and young collections become rarer. Cycles are still collected.
"""

from __future__ import annotations

import gc

#: net allocations between two young collections (CPython's default is 700): a step of the
#: detect role allocates tens of thousands, almost all freed by reference counting
YOUNG_THRESHOLD = 20_000


def settle() -> None:
    """Freeze what is alive now (built once, kept for the process's life) and make young
    collections rarer. Safe to call more than once (each call freezes what was added since)."""
    gc.freeze()
    young, middle, old = gc.get_threshold()
    if young < YOUNG_THRESHOLD:
        gc.set_threshold(YOUNG_THRESHOLD, middle, old)
