"""The whole configuration model: the core's sections plus each stage's own section.

``load_settings`` reads the YAML file, overlays ``ROCEWATCH_...`` environment variables, and
validates strictly; ``check`` then validates every plugin instance's options through the registry,
the cross-references (unique instance names; an embedded store keeps ingest and api together), and
every file the config names (:mod:`pipeline.config_files`): that it is there, and that the
topology, the collectors' targets files (their profiles and TLS files) and the lab's agents files
read. ``rocewatch check-config`` and ``rocewatch run`` (before it starts anything) run the same
check, so both refuse a broken config with the same one-line error.

This is the one loader: every process gets its settings here and hands them on, typed. The stage
loops receive the whole model in their :class:`~pipeline.stage.StageContext`, each typed as the
protocol of what it reads (the core's sections, :class:`~pipeline.stage.CoreSettings`, plus its
own section, e.g. ``detectors.loop.WithDetection``); the typed loaders of :mod:`rocewatch.app`
make mypy prove this model satisfies each one. The API's client and the dashboard are given their
address and token from here (``rocewatch query``, ``rocewatch dashboard``, ``rocewatch up``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from collectors.base import CollectorOptions
from collectors.inventory import load_inventory
from detectors.settings import DetectionSettings
from pipeline.config import (
    ApiSettings,
    BusSettings,
    CoordinationSettings,
    DashboardSettings,
    IngestSettings,
    MetricsSettings,
    PluginSpec,
    StoreSettings,
    Strict,
    apply_env,
    read_yaml,
    validate,
)
from pipeline.config_files import ConfigFile, check_paths
from pipeline.errors import ConfigError
from pipeline.inventory import Inventory, check_files, from_lab
from pipeline.inventory import load_inventory as load_core_inventory
from pipeline.registry import Registry
from pipeline.topology.model import Topology
from remediation.settings import RemediationSettings
from ui.api.access import AccessSettings
from ui.api.access import check as check_access


class Settings(Strict):
    site: str = "rocewatch"
    #: path of the fabric's topology JSON (``pipeline.topology.model.Topology.to_json``)
    topology: ConfigFile = ""
    bus: BusSettings = BusSettings()
    store: StoreSettings = StoreSettings()
    ingest: IngestSettings = IngestSettings()
    coordination: CoordinationSettings = CoordinationSettings()
    metrics: MetricsSettings = MetricsSettings()
    api: ApiSettings = ApiSettings()
    dashboard: DashboardSettings = DashboardSettings()
    access: AccessSettings = AccessSettings()
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
    origins: dict[str, str] = {}
    return validate(Settings, apply_env(data, env, origins), origins=origins)


def check(settings: Settings, roles: tuple[str, ...] = ()) -> list[str]:
    """Validate plugin options, cross-references and the files the config names; returns what was
    checked, raises ConfigError (or PluginError) on the first problem."""
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
            options = registry.options(spec, path)
            checked.append(f"{path} {spec.type} {spec.instance!r}")
            checked.extend(f"{line}: there" for line in check_paths(options, path))
            checked.extend(_read_files(options, path))
    checked.extend(f"{line}: there" for line in check_paths(settings))
    if settings.topology:
        _reads("topology", lambda: Topology.load(settings.topology))
        checked.append(f"topology {settings.topology}: reads")
    gnmi = settings.remediation.gnmi
    if gnmi.targets_file:
        _reads("remediation.gnmi.targets_file",
               lambda: _inventory(load_core_inventory(gnmi.targets_file)))
        checked.append(f"remediation.gnmi.targets_file {gnmi.targets_file}: reads")
    if gnmi.lab_agents_file:
        _reads("remediation.gnmi.lab_agents_file", lambda: _agents_file(gnmi.lab_agents_file))
        checked.append(f"remediation.gnmi.lab_agents_file {gnmi.lab_agents_file}: reads")
    checked.extend(check_access(settings.access))
    checked.extend(_check_detection_mode(settings, roles))
    if settings.store.kind == "chdb" and roles and ("ingest" in roles) != ("api" in roles):
        raise ConfigError("the embedded chDB store is owned by one process: run the ingest and "
                          "api roles together, or use store.kind: clickhouse", "store.kind")
    return checked


def _check_detection_mode(settings: Settings, roles: tuple[str, ...]) -> list[str]:
    """The correlate role runs only with partitioned detection; on the in-process bus the
    workers' symptoms have no reader but a correlate role of the same process."""
    mode = settings.detection.mode
    if "correlate" in roles and mode != "partitioned":
        raise ConfigError("the correlate role correlates partitioned detection's symptoms: set "
                          "detection.mode: partitioned (or run the detect role alone)",
                          "detection.mode")
    if mode == "partitioned" and settings.bus.kind == "memory" and roles and \
            ("detect" in roles) != ("correlate" in roles):
        raise ConfigError("partitioned detection on the in-process bus: run the detect and "
                          "correlate roles in the same process, or use bus.kind: kafka",
                          "detection.mode")
    return [f"detection.mode {mode}"] if mode != "single" else []


def _read_files(options: BaseModel, path: str) -> list[str]:
    """A collector's targets and agents files read as the collector will read them: every
    target valid, its profile known, its TLS files there."""
    if not isinstance(options, CollectorOptions):
        return []
    out = []
    if options.targets:
        dirs = options.profile_dirs
        _reads(f"{path}.targets", lambda: _inventory(load_inventory(options.targets, dirs)))
        out.append(f"{path}.targets {options.targets}: reads")
    if options.agents:
        _reads(f"{path}.agents", lambda: _agents_file(options.agents))
        out.append(f"{path}.agents {options.agents}: reads")
    return out


def _inventory(inventory: Inventory) -> Inventory:
    problems = check_files(inventory)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ConfigError(f"{problems[0]}{more}")
    return inventory


def _agents_file(path: str) -> Inventory:
    return _inventory(from_lab(path)[0])


def _reads(where: str, read: Callable[[], object]) -> None:
    """Run ``read``; what goes wrong becomes one ConfigError naming ``where``."""
    try:
        read()
    except ConfigError as exc:
        raise ConfigError(" ".join(str(exc).split()), where) from None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(f"cannot be read: {type(exc).__name__}: {exc}", where) from None
