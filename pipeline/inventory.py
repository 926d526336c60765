"""The targets file: which devices to collect from, how to reach them, and how they speak.

A YAML file, validated as strictly as the main config (unknown keys are errors naming their key
path). Credentials are *references*: names of environment variables, never the secrets
themselves. ``defaults`` is merged under every target (nested sections key by key)::

    format: 1
    defaults:
      sample_interval_s: 10
      credentials: {username_env: ROCEWATCH_GNMI_USER, password_env: ROCEWATCH_GNMI_PASSWORD}
    targets:
      - name: leaf1
        address: 10.0.0.11:9339
        protocol: gnmi
        profile: arista
        labels: {role: leaf, pod: pod1, plane: a}
        tls: {ca: pki/ca.pem, cert: pki/collector.pem, key: pki/collector.key}
      - name: leaf2
        address: 10.0.0.12:161
        protocol: snmp
        profile: snmp
        snmp: {version: "3", user: rocewatch, auth_key_env: SNMP_AUTH, priv_key_env: SNMP_PRIV}

:func:`from_lab` turns the lab's ``agents.json`` into the same model, with the lab's credentials
returned separately as an environment mapping.

The inventory is core data: the collectors read devices through it and remediation reaches them
through it (gNMI Set). Whether a target's ``profile`` exists is the collectors' knowledge; they
pass it in as a ``check`` (see :mod:`collectors.inventory`).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from pipeline.config import Duration, Strict, merge, read_yaml, validate
from pipeline.errors import ConfigError

_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.:-]*$"
_ENV = r"^([A-Za-z_][A-Za-z0-9_]*)?$"


class Credentials(Strict):
    """Names of the environment variables that hold a gNMI username and password."""

    username_env: str = Field("", pattern=_ENV)
    password_env: str = Field("", pattern=_ENV)


class Tls(Strict):
    """TLS for a gNMI target; ``cert`` + ``key`` make it mutual. Paths are relative to the file."""

    ca: str = ""
    cert: str = ""
    key: str = ""
    #: the name to verify the target's certificate against, when it differs from the address
    server_name: str = ""

    @model_validator(mode="after")
    def _pair(self) -> Tls:
        if bool(self.cert) != bool(self.key):
            raise ValueError("cert and key go together (mutual TLS needs both)")
        return self


class SnmpAuth(Strict):
    """SNMP v2c (community) or v3 USM (authNoPriv or authPriv) and the poll's knobs."""

    version: Literal["2c", "3"] = "2c"
    community_env: str = Field("", pattern=_ENV)
    user: str = ""
    auth_protocol: Literal["md5", "sha", "sha224", "sha256", "sha384", "sha512"] = "sha"
    auth_key_env: str = Field("", pattern=_ENV)
    priv_protocol: Literal["des", "3des", "aes", "aes192", "aes256"] = "aes"
    priv_key_env: str = Field("", pattern=_ENV)
    context: str = ""
    timeout_s: Duration = Field(1.0, gt=0)
    retries: int = Field(2, ge=0, le=10)
    max_repetitions: int = Field(50, ge=1, le=1000)
    #: columns asked for in one GETBULK (agents answer a bounded number of varbinds, so fewer
    #: columns means more rows per column per request; 4 was best against net-snmp)
    columns_per_request: int = Field(4, ge=1, le=64)

    @model_validator(mode="after")
    def _complete(self) -> SnmpAuth:
        if self.version == "2c" and not self.community_env:
            raise ValueError("version 2c needs community_env")
        if self.version == "3" and not (self.user and self.auth_key_env):
            raise ValueError("version 3 needs user and auth_key_env (priv_key_env for authPriv)")
        return self


class Labels(Strict):
    role: str = ""
    pod: str = ""
    plane: str = ""


class Target(Strict):
    name: str = Field(pattern=_NAME)
    address: str = Field(pattern=r"^.+:\d{1,5}$")
    protocol: Literal["gnmi", "snmp"]
    profile: str
    sample_interval_s: Duration = Field(10.0, gt=0)
    #: device seconds per wall second: 1 for real devices, the lab's speed for simulated ones
    clock_rate: float = Field(1.0, gt=0)
    labels: Labels = Labels()
    credentials: Credentials = Credentials()
    tls: Tls | None = None
    snmp: SnmpAuth | None = None

    @model_validator(mode="after")
    def _protocol_sections(self) -> Target:
        if self.protocol == "snmp" and self.snmp is None:
            raise ValueError("an snmp target needs an snmp section")
        if self.protocol == "gnmi" and self.snmp is not None:
            raise ValueError("the snmp section is for snmp targets")
        if self.protocol == "snmp" and self.tls is not None:
            raise ValueError("tls is for gnmi targets")
        return self

    @property
    def host(self) -> str:
        return self.address.rsplit(":", 1)[0].strip("[]")

    @property
    def port(self) -> int:
        return int(self.address.rsplit(":", 1)[1])


class Inventory(Strict):
    format: Literal[1] = 1
    defaults: dict[str, Any] = Field(default_factory=dict)
    targets: tuple[Target, ...] = ()

    def select(self, protocol: str, shard: str = "") -> tuple[Target, ...]:
        """The targets of one protocol, and of one shard ``i/n`` (stable hash of the name)."""
        chosen = [t for t in self.targets if t.protocol == protocol]
        if shard:
            index, count = parse_shard(shard)
            chosen = [t for t in chosen if zlib.crc32(t.name.encode()) % count == index]
        return tuple(chosen)


def parse_shard(text: str) -> tuple[int, int]:
    try:
        index, count = (int(p) for p in text.split("/"))
    except ValueError:
        raise ConfigError(f"shard must be i/n (like 0/4), not {text!r}") from None
    if not 0 <= index < count:
        raise ConfigError(f"shard {text!r}: want 0 <= i < n")
    return index, count



def _relative(path: str, base: Path) -> str:
    return str(base / path) if path and not Path(path).is_absolute() else path


#: a further check of one target: None when it is fine, else what is wrong with its profile
TargetCheck = Callable[["Target"], str | None]


def parse_inventory(data: Mapping[str, Any], where: str = "targets",
                    base: Path | None = None, check: TargetCheck | None = None) -> Inventory:
    """Validate a targets mapping: keys, defaults, unique names, and ``check`` on each target
    (the collectors check profiles). TLS paths are made relative to ``base`` (the file's
    directory)."""
    data = dict(data)
    defaults = data.get("defaults") or {}
    if not isinstance(defaults, Mapping):
        raise ConfigError("must be a mapping", f"{where}.defaults")
    for key in defaults:
        if key in ("name", "address"):
            raise ConfigError("names and addresses are per target", f"{where}.defaults.{key}")
        if key not in Target.model_fields:
            raise ConfigError("unknown key", f"{where}.defaults.{key}")
    raw_targets = data.get("targets") or []
    if not isinstance(raw_targets, list):
        raise ConfigError("must be a list", f"{where}.targets")
    targets = []
    for i, raw in enumerate(raw_targets):
        if not isinstance(raw, Mapping):
            raise ConfigError("must be a mapping", f"{where}.targets[{i}]")
        targets.append(merge(defaults, raw))
    inventory = validate(Inventory, {**data, "targets": targets}, where)
    seen: set[str] = set()
    fixed = []
    for i, target in enumerate(inventory.targets):
        path = f"{where}.targets[{i}]"
        if target.name in seen:
            raise ConfigError(f"target name {target.name!r} is used twice", f"{path}.name")
        seen.add(target.name)
        problem = check(target) if check is not None else None
        if problem:
            raise ConfigError(problem, f"{path}.profile")
        if base is not None and target.tls is not None:
            tls = target.tls.model_copy(update={
                k: _relative(getattr(target.tls, k), base) for k in ("ca", "cert", "key")})
            fixed.append(target.model_copy(update={"tls": tls}))
        else:
            fixed.append(target)
    return inventory.model_copy(update={"targets": tuple(fixed)})


def load_inventory(path: str | Path, check: TargetCheck | None = None) -> Inventory:
    """Read and validate a targets file."""
    path = Path(path)
    return parse_inventory(read_yaml(path), str(path), path.parent, check)


def check_files(inventory: Inventory) -> list[str]:
    """Problems with files the inventory names (TLS material that is missing)."""
    problems = []
    for target in inventory.targets:
        if target.tls is None:
            continue
        for key in ("ca", "cert", "key"):
            value = getattr(target.tls, key)
            if value and not Path(value).is_file():
                problems.append(f"{target.name}: tls.{key} {value} is not a file")
    return problems


@dataclass(frozen=True)
class Secrets:
    """A target's secrets, read from the environment when its session starts."""

    username: str = ""
    password: str = ""
    community: str = ""
    auth_key: str = ""
    priv_key: str = ""


def _lookup(env: Mapping[str, str], var: str, target: str, what: str) -> str:
    if not var:
        return ""
    if var not in env:
        raise ConfigError(f"target {target}: {what} comes from ${var}, which is not set")
    return env[var]


def resolve_secrets(target: Target, env: Mapping[str, str]) -> Secrets:
    """Read the secrets a target references; a missing variable is a ConfigError naming it."""
    snmp = target.snmp
    return Secrets(
        username=_lookup(env, target.credentials.username_env, target.name, "the username"),
        password=_lookup(env, target.credentials.password_env, target.name, "the password"),
        community=_lookup(env, snmp.community_env, target.name, "the community") if snmp else "",
        auth_key=_lookup(env, snmp.auth_key_env, target.name, "the auth key") if snmp else "",
        priv_key=_lookup(env, snmp.priv_key_env, target.name, "the priv key") if snmp else "",
    )


class _EnvNames:
    """Gives each distinct secret value of the lab one environment variable name."""

    def __init__(self) -> None:
        self.env: dict[str, str] = {}
        self._by_value: dict[tuple[str, str], str] = {}

    def name(self, base: str, value: str | None) -> str:
        if value is None or value == "":
            return ""
        key = (base, value)
        if key not in self._by_value:
            taken = sum(1 for b, _ in self._by_value if b == base)
            var = f"ROCEWATCH_LAB_{base}" + (f"_{taken + 1}" if taken else "")
            self._by_value[key] = var
            self.env[var] = value
        return self._by_value[key]


def from_lab(agents: Mapping[str, Any] | str | Path) -> tuple[Inventory, dict[str, str]]:
    """An inventory for the lab's agents (``agents.json``), and the environment its credential
    references need (the lab's credentials are not secrets, but the file format keeps none)."""
    if not isinstance(agents, Mapping):
        try:
            agents = json.loads(Path(agents).read_text())
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot read the lab's agents file {agents}: {exc}") from exc
        assert isinstance(agents, Mapping)
    names = _EnvNames()
    targets: list[dict[str, Any]] = []
    speed = float(agents.get("speed") or 1.0)
    interval = float(agents.get("sample_interval_s") or 1.0)
    for switch in agents.get("switches", []):
        base = {"name": switch["name"], "sample_interval_s": interval, "clock_rate": speed,
                "labels": {k: str(switch[k]) for k in ("role", "pod", "plane") if switch.get(k)}}
        gnmi, snmp = switch.get("gnmi"), switch.get("snmp")
        if gnmi:
            target = {**base, "address": gnmi["address"], "protocol": "gnmi",
                      "profile": gnmi.get("profile", "openconfig"),
                      "credentials": {
                          "username_env": names.name("GNMI_USERNAME", gnmi.get("username")),
                          "password_env": names.name("GNMI_PASSWORD", gnmi.get("password"))}}
            if gnmi.get("tls"):
                target["tls"] = {k: gnmi["tls"][k] for k in ("ca", "cert", "key")
                                 if gnmi["tls"].get(k)}
            targets.append(target)
        elif snmp:
            auth: dict[str, Any] = {"version": str(snmp.get("version", "2c"))}
            if auth["version"] == "3":
                auth["user"] = snmp.get("user") or snmp.get("username", "")
                auth["auth_key_env"] = names.name("SNMP_AUTH_KEY", snmp.get("auth_key"))
                auth["priv_key_env"] = names.name("SNMP_PRIV_KEY", snmp.get("priv_key"))
                for key in ("auth_protocol", "priv_protocol", "context"):
                    if snmp.get(key):
                        auth[key] = str(snmp[key]).lower()
            else:
                auth["community_env"] = names.name("SNMP_COMMUNITY", snmp.get("community"))
            targets.append({**base, "address": snmp["address"], "protocol": "snmp",
                            "profile": snmp.get("profile", "snmp"), "snmp": auth})
    where = f"lab agents ({agents.get('scenario', '?')})"
    return parse_inventory({"format": 1, "targets": targets}, where), names.env


def dump_inventory(inventory: Inventory) -> dict[str, Any]:
    """The inventory as a plain mapping for YAML, without default values."""
    return inventory.model_dump(mode="json", exclude_defaults=True, exclude={"defaults"}) | {
        "format": 1}
