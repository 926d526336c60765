"""Which neighbour reports change what the store knows: ingest's side of the neighbors topic.

The collectors report each device's whole LLDP table every LLDP interval; the store keeps only
what changed (:mod:`pipeline.store.neighbors`). :class:`NeighborRecorder` compares each port of a
report with what that port showed last: a different neighbour, or none where there was one, is a
change (a row), the same one again is not. What each port showed last is read from the store
when the recorder first needs it, so a restarted ingest (or another consumer taking over the
partition) records no change twice and misses none; a report older than what a port showed last
(a redelivery after a crash) changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable

from pipeline.store.base import Store
from pipeline.store.neighbors import neighbors_at
from pipeline.topology.neighbors import NeighborChange, NeighborReport


class NeighborRecorder:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._last: dict[tuple[str, str], NeighborChange] | None = None
        self.reports = 0

    def _known(self) -> dict[tuple[str, str], NeighborChange]:
        if self._last is None:
            self._last = {(c.device, c.port): c
                          for c in neighbors_at(self.store, None, present_only=False)}
        return self._last

    def changes(self, reports: Iterable[NeighborReport]) -> list[NeighborChange]:
        """The rows these reports add (in time order); remembers them as the ports' state."""
        known = self._known()
        out: list[NeighborChange] = []
        for report in sorted(reports, key=lambda r: r.ts_ns):
            self.reports += 1
            for port in report.ports:
                key = (report.device, port.name)
                now = NeighborChange.of(report.ts_ns, report.device, port)
                before = known.get(key)
                if before is None and not now.present:
                    continue          # nothing then, nothing now
                if before is not None and (now.ts_ns <= before.ts_ns or now.same_as(before)):
                    continue
                known[key] = now
                out.append(now)
        return out
