"""The audit trail: every notification and every runbook step becomes an
:class:`~pipeline.model.ActionResult` on the actions topic (ingest stores it).

Each record is a message of its own in the actions topic's format (:mod:`pipeline.wire.actions`),
keyed by target so a target's records stay in order. The recorder keeps the most recent records
in memory for health output and tests; it never decides anything.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Iterable

from pipeline.bus.base import Producer
from pipeline.errors import BusError
from pipeline.model import ActionResult
from pipeline.wire.actions import action_key, encode_actions

log = logging.getLogger("rocewatch.remediation.audit")


class Recorder:
    def __init__(self, producer: Producer | None, topic: str, keep: int = 1000) -> None:
        self._producer = producer
        self._topic = topic
        self._lock = threading.Lock()
        self.recent: deque[ActionResult] = deque(maxlen=keep)
        self.total = 0
        #: records other than notifications: what changes the state worth saving
        self.changes = 0
        self.failures = 0
        #: records by (action, the receiver of a notification or "", outcome), for metrics
        self.outcomes: dict[tuple[str, str, str], int] = {}

    def record(self, results: ActionResult | Iterable[ActionResult]) -> None:
        batch = [results] if isinstance(results, ActionResult) else list(results)
        with self._lock:
            self.recent.extend(batch)
            self.total += len(batch)
            self.changes += sum(1 for r in batch if r.action != "notify")
            for r in batch:
                key = (r.action, r.target if r.action == "notify" else "", r.outcome)
                self.outcomes[key] = self.outcomes.get(key, 0) + 1
            if self._producer is None:
                return
            for result in batch:
                try:
                    self._producer.send(self._topic, encode_actions([result]),
                                        key=action_key(result))
                except BusError as exc:  # the bus is down: say so loudly, keep the record here
                    self.failures += 1
                    log.error("cannot publish %s %s for %s: %s", result.action, result.outcome,
                              result.target, exc)

    def flush(self) -> None:
        if self._producer is not None:
            self._producer.flush()

    def find(self, action: str | None = None, target: str | None = None) -> list[ActionResult]:
        with self._lock:
            return [r for r in self.recent
                    if (action is None or r.action == action)
                    and (target is None or r.target == target)]
