"""The remediate role's loop: ``run(ctx, stop)`` (started by :mod:`rocewatch.app`).

It builds :class:`remediation.service.Remediation` from the ``remediation`` section of the
settings, registers its health probe, and polls the bus until ``stop`` is set. Everything it does
is described in ``docs/remediation.md``.
"""

from __future__ import annotations

import threading
from typing import Protocol

from pipeline.stage import CoreSettings, StageContext
from remediation.metrics import watch
from remediation.service import Remediation
from remediation.settings import RemediationSettings


class WithRemediation(CoreSettings, Protocol):
    """The settings the remediate role reads: the core's sections and ``remediation``."""

    @property
    def remediation(self) -> RemediationSettings: ...


def run(ctx: StageContext[WithRemediation], stop: threading.Event) -> None:
    settings = ctx.settings
    service = Remediation(settings.remediation, ctx.bus, ctx.topics, ctx.topology,
                          site=settings.site)
    service.topology_source = lambda: ctx.topology
    ctx.health["remediate"] = service.health
    watch(ctx.metrics, service)
    service.run(stop)
