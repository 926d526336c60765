"""The ``remediation`` section of the config: mode, receivers, routes and guards."""

from __future__ import annotations

from typing import Literal

from pipeline.config import PluginSpec, Strict


class RemediationSettings(Strict):
    mode: Literal["dry_run", "approval", "auto"] = "dry_run"
    receivers: tuple[PluginSpec, ...] = (PluginSpec(type="log", name="log"),)
    te_controller: str = ""
