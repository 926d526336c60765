"""When a live detect engine steps: what its polls return is gathered and stepped at once.

A consumer polls many times per sample interval (the switches' messages arrive spread over it,
each poll returns what came since the last), and every step of the chain runs each detector on
what got news and correlates the whole fabric: stepping on every poll costs about three times
stepping a few times per interval (docs/benchmarks.md). The chain gives the same state however
samples are batched (it splits them into waves of event time), so gathering changes when a
sample is judged, never what is found.

**The rule**: a step is due when what is gathered

* comes from ``share`` (``detection.gather_intervals``, a quarter) of the devices the chain knows
  (devices that sample in phase deliver their interval in one burst: stepped as it arrives), or
* spans ``share`` of the sample interval in event time (devices spread over the interval: a
  sample waits at most that long; a device whose clock is off widens the span, so it makes steps
  sooner, never later), or
* fills ``max_polls`` polls (memory), or
* the interval or the devices are not known yet (the first steps), or the share is 0;

and whenever a poll comes back empty (the consumer has caught up: nothing is to wait for).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pipeline.model import SampleBatch

#: a step is due at the latest once this many polls are gathered
MAX_POLLS = 20


@dataclass
class Gathered:
    """Samples polled and not stepped yet: the batches, their messages and polls, their
    devices and event-time span."""

    batches: list[SampleBatch] = field(default_factory=list)
    messages: int = 0
    polls: int = 0
    devices: set[str] = field(default_factory=set)
    oldest_ns: int = 0
    newest_ns: int = 0

    def add(self, batches: list[SampleBatch], messages: int) -> None:
        """One poll's decoded samples (and the messages they came in)."""
        for b in batches:
            lo, hi = int(b.ts_ns.min()), int(b.ts_ns.max())
            if self.batches:
                self.oldest_ns, self.newest_ns = min(self.oldest_ns, lo), max(self.newest_ns, hi)
            else:
                self.oldest_ns, self.newest_ns = lo, hi
            self.batches.append(b)
            if len(b.devices) == 1:
                self.devices.add(b.devices[0])
            else:  # a vocabulary may name more devices than the rows hold
                self.devices.update(b.devices[int(d)] for d in np.unique(b.device).tolist())
        self.messages += messages
        self.polls += 1

    def due(self, share: float, interval_ns: int, known_devices: int,
            max_polls: int = MAX_POLLS) -> bool:
        """Whether to step now (:mod:`detectors.gather`'s rule, a poll that came back empty
        aside: that is the caller's to know)."""
        if not self.messages:
            return False
        if share <= 0 or interval_ns <= 0 or known_devices <= 0 or self.polls >= max_polls:
            return True
        return (len(self.devices) >= share * known_devices
                or self.newest_ns - self.oldest_ns >= share * interval_ns)
