"""The remediate role's loop: ``run(ctx, stop)`` (started by :mod:`rocewatch.app`).

It builds :class:`remediation.service.Remediation` from the ``remediation`` section of the
settings, registers its health probe, and polls the bus until ``stop`` is set. Everything it does
is described in ``docs/remediation.md``.
"""

from __future__ import annotations

import threading

from pipeline.stage import StageContext
from remediation.service import Remediation


def run(ctx: StageContext, stop: threading.Event) -> None:
    settings = ctx.settings
    service = Remediation(settings.remediation, ctx.bus, ctx.topics, ctx.topology,
                          site=getattr(settings, "site", "rocewatch"))
    service.topology_source = lambda: ctx.topology
    ctx.health["remediate"] = service.health
    service.run(stop)
