"""The ``remediation`` section of the config: mode, receivers, the routing tree, inhibit rules,
static silences, the clock, the guards and the runbooks' knobs.

Durations and times are written in the platform's one grammar (:mod:`pipeline.times`,
``docs/time.md``): ``30s``, ``5m``, ``4h``, ``1h30m``, ``250ms`` or plain seconds; silences' times
as RFC 3339 with a zone. Cross-references are checked here: every receiver a route names exists,
every matcher parses, every silence ends after it starts. Secrets (TE token, gNMI password, receiver
keys) come from ``ROCEWATCH_REMEDIATION__...`` environment variables, never from the file.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from pipeline.config import Duration, Instant, PluginSpec, Strict
from pipeline.config_files import ConfigFile
from pipeline.errors import ConfigError
from pipeline.matchers import parse_matchers

__all__ = [  # Duration is pipeline.config's, named here for the receivers' options
    "MODE_ORDER", "ClockSettings", "DrainSettings", "Duration", "GnmiSettings", "GuardSettings",
    "InhibitRule", "Mode", "RemediationSettings", "RouteSettings", "RunbookSettings",
    "SilenceSettings", "TeSettings", "less_cautious_than", "most_cautious"]

Mode = Literal["dry_run", "approval", "auto"]
#: modes from the most to the least cautious; a runbook runs in the more cautious of two
MODE_ORDER: tuple[Mode, ...] = ("dry_run", "approval", "auto")


def less_cautious_than(a: Mode, b: Mode) -> bool:
    return MODE_ORDER.index(a) > MODE_ORDER.index(b)


def most_cautious(*modes: Mode) -> Mode:
    return min(modes, key=MODE_ORDER.index)


def _check_matchers(value: tuple[str, ...]) -> tuple[str, ...]:
    try:
        parse_matchers(value)
    except ConfigError as exc:
        raise ValueError(str(exc)) from None
    return value


class RouteSettings(Strict):
    """A node of the routing tree (Alertmanager's ``route``). Unset timings inherit the parent's;
    ``receivers`` empty on the root means every configured receiver."""

    receivers: tuple[str, ...] = ()
    matchers: tuple[str, ...] = ()
    group_by: tuple[str, ...] | None = None
    group_wait: Duration | None = None
    group_interval: Duration | None = None
    repeat_interval: Duration | None = None
    continue_: bool = Field(False, alias="continue")
    routes: tuple[RouteSettings, ...] = ()

    _matchers = field_validator("matchers")(_check_matchers)

    @field_validator("group_interval", "repeat_interval")
    @classmethod
    def _positive(cls, value: float | None) -> float | None:
        if value is not None and value <= 0:
            raise ValueError("must be longer than zero")
        return value


class InhibitRule(Strict):
    """Mute alerts matching ``target_matchers`` while an alert matching ``source_matchers`` fires
    with the same values of the ``equal`` labels."""

    source_matchers: tuple[str, ...]
    target_matchers: tuple[str, ...]
    equal: tuple[str, ...] = ()

    _matchers = field_validator("source_matchers", "target_matchers")(_check_matchers)


class SilenceSettings(Strict):
    """A silence written in the config file (maintenance windows); times are RFC 3339 with a
    zone (or ``@<Unix seconds>``), held as ns."""

    matchers: tuple[str, ...] = Field(min_length=1)
    starts_at: Instant
    ends_at: Instant
    created_by: str = "config"
    comment: str = ""

    _matchers = field_validator("matchers")(_check_matchers)

    @model_validator(mode="after")
    def _window(self) -> SilenceSettings:
        if self.ends_at <= self.starts_at:
            raise ValueError("ends_at must be after starts_at")
        return self


class ClockSettings(Strict):
    """How lifecycle timers see time. ``event``: the watermark of the samples and alerts seen,
    advancing with the wall clock only after ``idle_after`` without data; ``wall``: the wall
    clock. ``tick`` is the scheduler's heartbeat (wall time)."""

    time: Literal["event", "wall"] = "event"
    idle_after: Duration = 10.0
    tick: Duration = Field(0.25, gt=0)


class GuardSettings(Strict):
    """The safety guards in front of every runbook (numbers, sources: docs/remediation.md)."""

    min_confidence: float = Field(0.5, ge=0, le=1)
    confirm: Duration = 30.0
    leaf_capacity_floor: float = Field(0.5, ge=0, le=1)
    spine_capacity_floor: float = Field(0.5, ge=0, le=1)
    #: three tiers: what a spine keeps of its aggregation uplinks, an aggregation switch of its
    #: capacity, and a zone of its capacity to the rest of the fabric
    spine_uplink_floor: float = Field(0.5, ge=0, le=1)
    agg_capacity_floor: float = Field(0.5, ge=0, le=1)
    zone_capacity_floor: float = Field(0.5, ge=0, le=1)
    max_drained_per_leaf: int = Field(1, ge=0)
    #: drained aggregation uplinks per spine
    max_drained_per_spine: int = Field(1, ge=0)
    max_drained_fraction: float = Field(0.02, ge=0, le=1)
    max_isolated_hosts: int = Field(1, ge=0)
    max_actions_per_hour: int = Field(10, ge=0)
    cooldown: Duration = 600.0
    target_cooldown: Duration = 3600.0
    halt_incidents: int = Field(4, ge=1)
    halt_link_fraction: float = Field(0.1, gt=0, le=1)
    approval_timeout: Duration = 1800.0


class RunbookSettings(Strict):
    """One runbook: whether it runs and the least cautious mode it may run in."""

    enabled: bool = True
    mode: Mode = "auto"


class TeSettings(Strict):
    timeout: Duration = 5.0
    token: SecretStr = SecretStr("")
    attempts: int = Field(3, ge=1)
    #: how often (wall time) to ask the controller which links it holds drained, so a link
    #: someone drained there is in maintenance here too; 0: never
    watch: Duration = Field(5.0, ge=0)


class GnmiSettings(Strict):
    """How runbooks reach switches; addresses come from the targets inventory, or from
    ``devices`` (name → host:port) which overrides it."""

    timeout: Duration = 5.0
    #: the collectors' targets file (YAML) or the lab's agents file (JSON)
    targets_file: ConfigFile = ""
    lab_agents_file: ConfigFile = ""
    #: override the inventory's credential references (set the password from the environment)
    username: str = ""
    password: SecretStr = SecretStr("")
    devices: dict[str, str] = Field(default_factory=dict)

    @field_validator("devices")
    @classmethod
    def _addresses(cls, value: dict[str, str]) -> dict[str, str]:
        for name, addr in value.items():
            host, _, port = addr.rpartition(":")
            if not host or not port.isdigit():
                raise ValueError(f"{name}: want host:port, got {addr!r}")
        return value


class DrainSettings(Strict):
    """The link-drain and host-isolation runbooks' steps."""

    link: RunbookSettings = RunbookSettings()
    host: RunbookSettings = RunbookSettings(mode="approval")
    residual_gbps: float = Field(0.5, ge=0)
    verify_samples: int = Field(2, ge=1)
    verify_timeout: Duration = 60.0
    on_residual: Literal["abort", "proceed"] = "abort"
    down_timeout: Duration = 30.0
    soak: Duration = 600.0
    soak_min_samples: int = Field(3, ge=1)


class RemediationSettings(Strict):
    mode: Mode = "dry_run"
    #: what reaches the receivers: root-cause ``incidents`` only (symptoms stay visible in the
    #: dashboard and the store; paging on every congested port is crying wolf), or ``all``
    notify: Literal["incidents", "all"] = "incidents"
    receivers: tuple[PluginSpec, ...] = (PluginSpec(type="log", name="log"),)
    route: RouteSettings = RouteSettings()
    inhibit_rules: tuple[InhibitRule, ...] = ()
    silences: tuple[SilenceSettings, ...] = ()
    clock: ClockSettings = ClockSettings()
    guards: GuardSettings = GuardSettings()
    drain: DrainSettings = DrainSettings()
    #: base URL of the TE controller (docs/te-controller.md); empty: no TE notices, and the
    #: drain runbook refuses to run outside dry-run
    te_controller: str = ""
    te: TeSettings = TeSettings()
    gnmi: GnmiSettings = GnmiSettings()
    #: snapshot of drains, silences and the halt latch, so a restart forgets no drained link
    #: ("" keeps nothing: for tests and throw-away runs)
    state_path: str = "var/remediation/state.json"

    @model_validator(mode="after")
    def _receivers_exist(self) -> RemediationSettings:
        names = {spec.instance for spec in self.receivers}

        def walk(route: RouteSettings, where: str) -> None:
            for name in route.receivers:
                if name not in names:
                    raise ValueError(f"{where}.receivers: no receiver named {name!r} "
                                     f"(configured: {', '.join(sorted(names)) or 'none'})")
            for i, child in enumerate(route.routes):
                walk(child, f"{where}.routes[{i}]")

        walk(self.route, "route")
        if self.route.matchers:
            raise ValueError("route.matchers: the root route matches every alert; "
                             "put matchers on its child routes")
        return self
