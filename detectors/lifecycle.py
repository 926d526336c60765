"""Alert state by fingerprint, on event time: what changed since the last step.

:class:`AlertBook` receives, at each step, the complete set of alerts active now (incidents and
symptoms) and returns only the state changes to publish, Alertmanager style:

* **firing**   a fingerprint not active before: published with its ``starts_at``;
* **updated**  an active fingerprint whose verdict changed (severity, root cause, what it explains,
  what inhibits it, its ports), or whose evidence has not been re-published for ``update_every_s``
  of event time (``symptom_every_s`` for a symptom: there are many, and only their evidence
  moves): published with the original ``starts_at`` and a new ``updated_at``;
* **resolved** a fingerprint no longer active: published once with ``ends_at`` = the step's event
  time.

Times are the samples' event times, never a wall clock.
"""

from __future__ import annotations

from collections.abc import Iterable
from operator import attrgetter

from pipeline.model import Alert

#: what an alert says, beyond its evidence: a change of any of it is published at once
_VERDICT = attrgetter("severity", "root_cause", "inhibited_by", "ports", "name", "entity")


class AlertBook:
    def __init__(self, update_every_s: float = 10.0,
                 symptom_every_s: float | None = None) -> None:
        self.update_every_ns = int(update_every_s * 1e9)
        self.symptom_every_ns = (self.update_every_ns if symptom_every_s is None
                                 else int(symptom_every_s * 1e9))
        self.firing: dict[str, Alert] = {}
        self._published_ns: dict[str, int] = {}
        self.counts = {"firing": 0, "updated": 0, "resolved": 0}

    def reconcile(self, current: Iterable[Alert], now_ns: int) -> list[Alert]:
        out: list[Alert] = []
        seen: set[str] = set()
        # the loop runs over thousands of symptoms a step: what it reads, bound once
        firing, published, publish = self.firing, self._published_ns, out.append
        root_every, symptom_every = self.update_every_ns, self.symptom_every_ns
        fresh = updated = 0
        for alert in current:
            fp = alert.fingerprint
            if fp in seen:
                continue
            seen.add(fp)
            prev = firing.get(fp)
            if prev is None:
                firing[fp] = alert
                published[fp] = now_ns
                fresh += 1
                publish(alert)
                continue
            if alert is prev:  # the very alert of the last step (symptoms of devices not
                changed = False  # judged since, restated by the same copy): nothing changed
                kept = prev
            else:
                kept = (alert if alert.starts_ns == prev.starts_ns
                        else alert.replace(starts_ns=prev.starts_ns))
                firing[fp] = kept
                changed = _VERDICT(kept) != _VERDICT(prev)
            if changed or now_ns - published[fp] >= (root_every if kept.root_cause
                                                     else symptom_every):
                published[fp] = now_ns
                updated += 1
                publish(kept)
        self.counts["firing"] += fresh
        self.counts["updated"] += updated
        # every fingerprint seen is held now: none went unless the book holds more
        gone = [fp for fp in self.firing if fp not in seen] if len(self.firing) > len(seen) else []
        for fp in gone:
            prev = self.firing.pop(fp)
            self._published_ns.pop(fp, None)
            end = max(now_ns, prev.updated_ns)
            self.counts["resolved"] += 1
            out.append(prev.replace(ends_ns=end, updated_ns=end))
        return out

    def resume(self, firing: Iterable[Alert]) -> None:
        """Start from what an earlier book published as firing (and did not resolve): a book
        that takes over another's work resolves what is no longer active instead of never
        having known it."""
        for alert in firing:
            self.firing[alert.fingerprint] = alert
            self._published_ns[alert.fingerprint] = alert.updated_ns

    def active(self) -> list[Alert]:
        return list(self.firing.values())
