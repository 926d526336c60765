"""The whole configuration model: the core's sections plus each stage's own section.

``load_settings`` reads the YAML file, overlays ``ROCEWATCH_...`` environment variables, and
validates strictly; ``check`` then validates every plugin instance's options through the registry
and the cross-references (unique instance names; an embedded store keeps ingest and api together).

This is the one loader: every process gets its settings here and hands them on, typed. The stage
loops receive the whole model in their :class:`~pipeline.stage.StageContext`, each typed as the
protocol of what it reads (the core's sections, :class:`~pipeline.stage.CoreSettings`, plus its
own section, e.g. ``detectors.loop.WithDetection``); the typed loaders of :mod:`rocewatch.app`
make mypy prove this model satisfies each one. The API's client and the dashboard are given their
address and token from here (``rocewatch query``, ``rocewatch dashboard``, ``rocewatch up``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from detectors.settings import DetectionSettings
from pipeline.config import (
    ApiSettings,
    BusSettings,
    DashboardSettings,
    PluginSpec,
    StoreSettings,
    Strict,
    apply_env,
    read_yaml,
    validate,
)
from pipeline.errors import ConfigError
from pipeline.registry import Registry
from remediation.settings import RemediationSettings


class Settings(Strict):
    site: str = "rocewatch"
    #: path of the fabric's topology JSON (``pipeline.topology.model.Topology.to_json``)
    topology: str = ""
    bus: BusSettings = BusSettings()
    store: StoreSettings = StoreSettings()
    api: ApiSettings = ApiSettings()
    dashboard: DashboardSettings = DashboardSettings()
    collectors: tuple[PluginSpec, ...] = ()
    detection: DetectionSettings = DetectionSettings()
    remediation: RemediationSettings = RemediationSettings()


def load_settings(path: str | Path | None = None,
                  env: Mapping[str, str] | None = None,
                  overrides: Mapping[str, Any] | None = None) -> Settings:
    """File (optional) → environment overrides → explicit overrides → strict validation."""
    data: dict[str, Any] = read_yaml(path) if path else {}
    for key, value in (overrides or {}).items():
        data[key] = value
    return validate(Settings, apply_env(data, env))


def check(settings: Settings, roles: tuple[str, ...] = ()) -> list[str]:
    """Validate plugin options and cross-references; returns what was checked, raises on error."""
    checked: list[str] = []
    groups = (
        ("collectors", "rocewatch.collectors", settings.collectors),
        ("detection.detectors", "rocewatch.detectors", settings.detection.detectors),
        ("remediation.receivers", "rocewatch.actions", settings.remediation.receivers),
    )
    for where, group, specs in groups:
        registry: Registry[Any] = Registry(group)
        seen: set[str] = set()
        for i, spec in enumerate(specs):
            path = f"{where}[{i}]"
            if spec.instance in seen:
                raise ConfigError(f"instance name {spec.instance!r} is used twice", path)
            seen.add(spec.instance)
            registry.options(spec, path)
            checked.append(f"{path} {spec.type} {spec.instance!r}")
    if settings.store.kind == "chdb" and roles and ("ingest" in roles) != ("api" in roles):
        raise ConfigError("the embedded chDB store is owned by one process: run the ingest and "
                          "api roles together, or use store.kind: clickhouse", "store.kind")
    return checked
