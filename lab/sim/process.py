"""The simulator's own process: ``python -m lab.sim.process FD`` with its job pickled on stdin.

The lab starts the simulator with :mod:`subprocess` rather than :mod:`multiprocessing` so that a
script embedding :class:`~lab.runtime.Lab` needs no ``if __name__ == "__main__"`` guard (spawn
would re-run it) and no forking of a process that already runs gRPC threads. ``FD`` is this end of
a socket pair that carries the control commands (a :class:`multiprocessing.connection.Connection`).
"""

from __future__ import annotations

import pickle
import sys
from multiprocessing.connection import Connection

from lab.runner import serve_simulation


def main(argv: list[str]) -> int:
    fd = int(argv[1])
    scenario, options, shm_name, size, slots = pickle.loads(sys.stdin.buffer.read())
    serve_simulation(scenario, options, shm_name, size, slots, Connection(fd))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
