"""``pause_without_load`` split at its summary: the switch's own numbers on the worker, the
comparison with its role peers on the correlator's side.

The rule (:mod:`detectors.rules.pause_without_load`) sums a switch up at each sample (how much
and how widely it pauses its neighbours, how much it is paused, its busiest egress, its ECN) from
its own ports, then judges that summary against its role peers' latest. A worker runs the first
half (:class:`PauseSummaries`: the summaries of the switches it judged, nothing fired) and reports
them (:class:`~pipeline.wire.symptoms.DeviceSummary`); the correlator runs the second
(:class:`PauseJudge`: the same rule's judgement, persistence and symptoms, on the summaries of
every worker). A few numbers per switch and sample cross the bus instead of its counters.
"""

from __future__ import annotations

from itertools import groupby
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from detectors.features import Frame
from detectors.rule import DeviceVerdict
from detectors.rules.pause_without_load import PauseWithoutLoad, _Summary
from detectors.signals import At
from pipeline.model import Alert
from pipeline.wire.symptoms import DeviceSummary


class PauseSummaries(PauseWithoutLoad):
    """The worker's half: every judged switch's summary, kept for the report."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.summaries: list[DeviceSummary] = []

    def evaluate_device(self, frame: Frame, did: int, at: At) -> DeviceVerdict:
        s = self._summary(frame, at)
        self.summaries.append(DeviceSummary(
            rule=self.instance, device=frame.ports.names.devices[did], ts_ns=int(at.ts[0]),
            values=s.numbers(), ports=s.pausing_ports))
        return DeviceVerdict(False, False)

    def take(self) -> list[DeviceSummary]:
        out, self.summaries = self.summaries, []
        return out


class _Names:
    def __init__(self) -> None:
        self.devices: list[str] = []


class _Ports:
    def __init__(self) -> None:
        self.names = _Names()


class _Devices:
    """What the rule's judgement reads of a frame: the devices' names by id."""

    def __init__(self) -> None:
        self.ports = _Ports()
        self.ids: dict[str, int] = {}

    def id(self, device: str) -> int:
        did = self.ids.get(device)
        if did is None:
            did = self.ids[device] = len(self.ports.names.devices)
            self.ports.names.devices.append(device)
        return did


class PauseJudge(PauseWithoutLoad):
    """The correlator's half: the rule's judgement on the workers' summaries."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._devices = _Devices()
        self._given: _Summary | None = None

    def _summary(self, frame: Frame, at: At) -> _Summary:
        assert self._given is not None
        return self._given

    def judge(self, summaries: list[DeviceSummary]) -> list[Alert]:
        """Judge the summaries (in time order; a switch's older ones again are ignored) against
        the peers' latest; returns the symptoms active now."""
        frame = cast(Frame, self._devices)
        none = np.empty(0, np.int64)
        for _, at_once in groupby(summaries, key=lambda s: s.ts_ns):
            # as one process: every switch of a sample time judged in turn, then all of their
            # verdicts through the persistence at once
            due: list[tuple[int, NDArray[np.int64], int]] = []
            verdicts: list[DeviceVerdict] = []
            for s in at_once:
                did = self._devices.id(s.device)
                if s.ts_ns <= self.last_eval.get(did, -1):
                    continue
                self.last_eval[did] = s.ts_ns
                self._given = _Summary.from_numbers(s.values, tuple(s.ports))
                verdicts.append(self.evaluate_device(frame, did, cast(At, None)))
                due.append((did, none, s.ts_ns))
            if due:
                self._advance(frame, due, verdicts)
        self._given = None
        return self.symptoms.alerts()

    def observe(self, frame: Frame, now_ns: int) -> list[Alert]:
        return self.symptoms.alerts()  # judged from summaries (judge), not from a frame
