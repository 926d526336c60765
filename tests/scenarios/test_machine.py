"""How busy the machine is before a scenario run, and the speed that leaves the run."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocewatch.scenario.machine import (
    MIN_FACTOR,
    QUIET_IDLE,
    STAT,
    cpu_times,
    idle_share,
    speed_factor,
)

# user nice system idle iowait irq softirq steal guest guest_nice
BEFORE = "cpu  1000 0 500 8000 100 0 0 0 0 0\ncpu0 500 0 250 4000 50 0 0 0 0 0\nintr 1 2 3\n"
#: 1,000 jiffies later: 600 busy (user 400, system 200), 400 idle (idle 300, iowait 100)
AFTER = "cpu  1400 0 700 8300 200 0 0 0 0 0\ncpu0 700 0 350 4150 100 0 0 0 0 0\nintr 1 2 3\n"


def _share(tmp_path: Path, before: str, after: str) -> float:
    stat = tmp_path / "stat"
    stat.write_text(before)

    def meanwhile(_s: float) -> None:  # the sample's wait, while other work moves the counters
        stat.write_text(after)

    return idle_share(0.5, stat, wait=meanwhile)


def test_idle_share_is_the_idle_time_of_every_core_over_the_sample(tmp_path: Path) -> None:
    assert _share(tmp_path, BEFORE, AFTER) == pytest.approx(0.4)


def test_idle_share_knows_nothing_without_proc_stat(tmp_path: Path) -> None:
    assert idle_share(0.0, tmp_path / "missing") == 1.0
    assert _share(tmp_path, "intr 1\n", "intr 2\n") == 1.0
    # a counter that did not move (or went back) says nothing either
    assert _share(tmp_path, BEFORE, BEFORE) == 1.0
    assert _share(tmp_path, AFTER, BEFORE) == 1.0


def test_this_machines_proc_stat_has_the_line_the_share_is_read_from() -> None:
    idle, total = cpu_times(STAT.read_text())
    assert 0 < idle < total


def test_a_quiet_machine_keeps_the_speed_a_busy_one_slows_it_in_proportion() -> None:
    assert speed_factor(1.0) == 1.0
    assert speed_factor(QUIET_IDLE) == 1.0
    assert speed_factor(QUIET_IDLE / 2) == pytest.approx(0.5)
    assert speed_factor(0.0) == MIN_FACTOR
