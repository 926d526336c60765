"""The heartbeat: APScheduler drives remediation's periodic work on the wall clock, and every job
asks the event clock what time it is.

Jobs: flush alert groups whose ``group_wait``/``group_interval``/``repeat_interval`` has come
(notifications and Alertmanager re-sends), advance the runbooks (drain step timeouts, traffic
checks, soaks, approval expiry, deferred proposals), and housekeeping (expired silences, the state
snapshot). The scheduler only decides *how often to look*; *what is due* is decided on event time
(:mod:`remediation.clock`), which is how the same configuration behaves in a live fabric and in a
scenario compressed twenty-fold. Each job runs one instance at a time and missed runs coalesce.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.interval import IntervalTrigger

log = logging.getLogger("rocewatch.remediation.scheduler")


class Heartbeat:
    def __init__(self) -> None:
        self._scheduler = BackgroundScheduler(
            timezone="UTC",
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": 5})
        self.runs: dict[str, int] = {}
        self.errors: dict[str, int] = {}

    def every(self, name: str, seconds: float, job: Callable[[], Any]) -> None:
        def guarded() -> None:
            try:
                job()
            except Exception:  # a job's bug must not stop the heartbeat: log, count, go on
                self.errors[name] = self.errors.get(name, 0) + 1
                log.exception("remediation job %s failed", name)
            finally:
                self.runs[name] = self.runs.get(name, 0) + 1

        self._scheduler.add_job(guarded, IntervalTrigger(seconds=seconds), id=name, name=name,
                                replace_existing=True)

    def start(self) -> None:
        self._scheduler.start()

    def stop(self) -> None:
        if self._scheduler.running:
            self._scheduler.shutdown(wait=True)
