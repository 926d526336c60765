"""How much of this machine a scenario run can have, and what that does to its speed.

A run is the lab, its agents and the whole platform in one or two processes; at a given speed
they need a given amount of CPU. On a machine another job keeps busy, the same speed starves
them: the lab serves late, SNMP poll cycles stretch past their interval, and the collectors
report intervals they could not fill (``no_data`` that says more about the machine than about
the fabric). So the runner looks before it starts: :func:`idle_share` is the share of every
core's time nobody used over a short sample of ``/proc/stat``, and :func:`speed_factor` turns
it into how much of the asked speed the run may use. A machine with :data:`QUIET_IDLE` of its
time idle or more runs at the asked speed; below that, the speed shrinks in proportion to what
is idle, never below :data:`MIN_FACTOR` of it (a run that crawls still ends).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["MIN_FACTOR", "QUIET_IDLE", "STAT", "cpu_times", "idle_share", "speed_factor"]

#: the idle share at and above which a machine counts as quiet
QUIET_IDLE = 0.75
#: the slowest a busy machine makes a run, as a share of the asked speed
MIN_FACTOR = 0.1
#: the columns of a ``/proc/stat`` cpu line that are time nobody used (idle, iowait)
_IDLE_COLUMNS = (3, 4)
STAT = Path("/proc/stat")


def cpu_times(text: str) -> tuple[int, int]:
    """``(idle, total)`` jiffies of the aggregate ``cpu`` line of a ``/proc/stat`` text."""
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            # guest time is counted in user time already
            values = [int(v) for v in fields[1:9]]
            return sum(values[i] for i in _IDLE_COLUMNS), sum(values)
    raise ValueError("no aggregate cpu line in /proc/stat")


def idle_share(sample_s: float = 1.0, stat: Path = STAT,
               wait: Callable[[float], None] = time.sleep) -> float:
    """The share (0..1) of all cores' time that was idle over the next ``sample_s`` seconds;
    1.0 where ``/proc/stat`` cannot be read (nothing known: the asked speed stands)."""
    try:
        idle0, total0 = cpu_times(stat.read_text())
        wait(sample_s)
        idle1, total1 = cpu_times(stat.read_text())
    except (OSError, ValueError):
        return 1.0
    if total1 <= total0:
        return 1.0
    return min(1.0, max(0.0, (idle1 - idle0) / (total1 - total0)))


def speed_factor(idle: float) -> float:
    """The share of the asked speed a run may use on a machine ``idle`` (0..1) idle."""
    return min(1.0, max(MIN_FACTOR, idle / QUIET_IDLE))
