"""How a long-running rocewatch process keeps CPython's cycle collector off its hot path.

A role's loop allocates and drops thousands of small containers every step (alerts and their
evidence, label dicts, lists of symptoms); reference counting frees them, and the cycle
collector has only cycles to find. CPython's default policy runs a young collection every 700
net allocations and a full one every hundred of those, and a full collection walks every tracked
object the process holds: the topology, the series and port indices, the loaded modules and,
in the detect role, thousands of active alerts. Measured on the detection chain at one zone,
collections were about a fifth of its CPU (docs/benchmarks.md).

The policy is the process's, so its entry point opts in (:func:`enable`: the ``rocewatch``
command; a library user or a test process keeps CPython's own). Then :func:`settle`, called once a
loop has built what it keeps for the process's life, moves what is alive to the permanent
generation (``gc.freeze``: never walked again) and makes young collections rarer; cycles made
later are still collected. At exit the frozen objects are handed back to the collector first, so
the interpreter tears them down in its usual order (native libraries such as chDB shut down
their own state from objects' finalisers, and abort when those run out of order).
"""

from __future__ import annotations

import atexit
import gc

#: net allocations between two young collections (CPython's default is 700): a step of the
#: detect role allocates tens of thousands, almost all freed by reference counting
YOUNG_THRESHOLD = 20_000


class _Policy:
    """Whether this process opted in, and whether its exit hook is registered."""

    enabled = False
    hooked = False


def enable() -> None:
    """Opt this process in (its entry point's call): :func:`settle` acts from now on."""
    _Policy.enabled = True


def settle() -> None:
    """Freeze what is alive now (built once, kept for the process's life) and make young
    collections rarer, in a process that opted in (:func:`enable`; else nothing). Safe to call
    more than once: each call freezes what was added since."""
    if not _Policy.enabled:
        return
    if not _Policy.hooked:
        atexit.register(gc.unfreeze)
        _Policy.hooked = True
    gc.freeze()
    young, middle, old = gc.get_threshold()
    if young < YOUNG_THRESHOLD:
        gc.set_threshold(YOUNG_THRESHOLD, middle, old)
