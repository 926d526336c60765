"""The clocks a collector reads, and the one rule for samples the collector stamps itself.

* :class:`DeviceClock`: one target's time between its samples (its last timestamp plus the wall
  time since, at the target's ``clock_rate``); it stamps the odd gNMI notification that came
  without a timestamp.
* :class:`FabricClock`: the collector's event time, the newest device time any of its targets has
  shown. While data flows it *holds* at that newest time rather than extrapolating on the wall
  clock, so a lab that lags its schedule under load, or a target whose data is delivered later
  than the others', never makes the collector's idea of "now" run ahead of the devices. Only when
  every target has been quiet for ``hold_s`` wall seconds does it move on with the wall clock
  (a fabric that went dark still gets its "down" reported, at advancing times).
* :class:`CollectorClock`: what a sample is stamped with when its device has no usable clock (an
  SNMP device without ``hrSystemDate``, or with one that is off). **The rule**: the stamp is this
  clock read at the instant the poll started, and nothing is fed back into any clock from such a
  stamp. It is linear in the wall clock (rate ``clock_rate``) from one anchor taken when first
  read, so two polls ``I`` wall seconds apart are stamped exactly ``I x rate`` apart and a rate
  over them is unbiased, however long each poll took.

:func:`clock_offset_ok` is the check that a device's clock agrees with the collector's: a device
at ``clock_rate`` 1 must be within the tolerance of the wall clock; a simulated device running
faster than the wall (the lab at ``--speed``) can be ahead of it by any amount, never behind (its
clock started at the wall's time and has run faster since).
"""

from __future__ import annotations

import time

#: the fabric clock holds at least this long (wall) before moving on without data: a lab behind
#: its schedule at speed delivers in bursts this far apart
HOLD_MIN_S = 2.0


def wall_ns(mono: float) -> int:
    """The wall clock (ns since the epoch) at a ``time.monotonic()`` instant."""
    return time.time_ns() - int((time.monotonic() - mono) * 1e9)


class DeviceClock:
    """Device time from the last (device ns, wall s) pair, advancing at ``rate``."""

    def __init__(self, rate: float = 1.0) -> None:
        self.rate = rate
        self._device_ns = 0
        self._wall = 0.0

    def observe(self, device_ns: int, wall: float) -> None:
        if device_ns > 0:
            self._device_ns, self._wall = device_ns, wall

    @property
    def known(self) -> bool:
        return self._device_ns > 0

    def now_ns(self, wall: float | None = None) -> int:
        """The device's time now (0 when it has not shown its clock yet)."""
        wall = time.monotonic() if wall is None else wall
        if not self._device_ns:
            return 0
        return self._device_ns + int((wall - self._wall) * self.rate * 1e9)


class FabricClock:
    """The newest device time any target of a collector has shown; see the module docstring."""

    def __init__(self, hold_s: float = 1.0, rate: float = 1.0) -> None:
        self.hold_s = hold_s
        self.rate = rate
        self.newest_ns = 0
        self._seen_wall = 0.0

    def observe(self, device_ns: int, wall: float) -> None:
        if device_ns > self.newest_ns:
            self.newest_ns, self._seen_wall = device_ns, wall

    @property
    def known(self) -> bool:
        return self.newest_ns > 0

    def now_ns(self, wall: float) -> int:
        """Event time now: the newest device time, moved on by the wall clock only once nothing
        newer has come for ``hold_s`` (0 while no target has shown a time)."""
        if not self.newest_ns:
            return 0
        quiet = wall - self._seen_wall - self.hold_s
        return self.newest_ns + (int(quiet * self.rate * 1e9) if quiet > 0 else 0)


class CollectorClock:
    """The stamps of collector-clocked samples: linear in the wall clock from one anchor."""

    def __init__(self, rate: float = 1.0) -> None:
        self.rate = rate
        self._anchor: tuple[int, float] | None = None

    def anchor(self, device_ns: int, wall: float) -> None:
        """Start from a known event time (the fabric's) instead of the wall clock; only before
        the first stamp, so stamps never jump."""
        if self._anchor is None and device_ns > 0:
            self._anchor = (device_ns, wall)

    def stamp(self, wall: float) -> int:
        """The time of a sample taken at the ``time.monotonic()`` instant ``wall``."""
        if self._anchor is None:
            self._anchor = (wall_ns(wall), wall)
        ns, at = self._anchor
        return ns + int((wall - at) * self.rate * 1e9)


def clock_offset_ok(device_ns: int, wall: float, rate: float, tolerance_s: float) -> bool:
    """Whether a device's time read at ``wall`` agrees with the collector's clock."""
    offset = (device_ns - wall_ns(wall)) / 1e9
    behind_ok = rate < 1.0 or offset >= -tolerance_s  # a slower clock falls behind the wall
    ahead_ok = rate > 1.0 or offset <= tolerance_s  # a faster one runs ahead of it
    return behind_ok and ahead_ok
