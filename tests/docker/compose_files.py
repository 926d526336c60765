"""Reading the compose files as Docker would, without Docker (it cannot run here): the services
that run a rocewatch role, their environment with compose's defaults filled in, and the settings
each container would load, with the paths it sees mapped to the files of this checkout."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from rocewatch.settings import Settings, load_settings

DOCKER = Path(__file__).resolve().parents[2] / "docker"
REPO = DOCKER.parent


def load_compose(name: str) -> dict[str, Any]:
    data = yaml.safe_load((DOCKER / name).read_text())
    assert isinstance(data, dict), name
    return data


def role_services(compose: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    """service name → (role, service) for every rocewatch container."""
    out = {}
    for name, svc in compose["services"].items():
        command = svc.get("command") or []
        if command[:1] == ["run"]:
            assert command[1] == "--role", f"{name}: {command}"
            out[name] = (command[2], svc)
    return out


def container_env(svc: dict[str, Any]) -> dict[str, str]:
    """The service's environment with compose's ${VAR:-default} filled from the defaults."""
    env = {}
    for key, value in (svc.get("environment") or {}).items():
        env[key] = re.sub(r"\$\{[A-Za-z_][A-Za-z0-9_]*:-([^}]*)\}", r"\1", str(value))
    return env


def _mounts(svc: dict[str, Any]) -> list[tuple[str, Path]]:
    """(path in the container, the host path it is) of every bind mount, longest first."""
    out = []
    for volume in svc.get("volumes", []):
        source, target = str(volume).split(":")[:2]
        if source.startswith((".", "/")):
            out.append((target, (DOCKER / source).resolve()))
    return sorted(out, key=lambda m: -len(m[0]))


def host_path(container_path: str, svc: dict[str, Any]) -> Path:
    """The file of this checkout the container sees at ``container_path``."""
    for target, source in _mounts(svc):
        if container_path == target:
            return source
        if container_path.startswith(target + "/"):
            return source / container_path[len(target) + 1:]
    raise AssertionError(f"{container_path} is not on a volume of the service")


def _as_host(value: Any, svc: dict[str, Any]) -> Any:
    """``value`` with every string that is a path on a bind mount mapped to the host's file."""
    if isinstance(value, dict):
        return {k: _as_host(v, svc) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_host(v, svc) for v in value]
    if isinstance(value, str) and any(value == t or value.startswith(t + "/")
                                      for t, _ in _mounts(svc)):
        return str(host_path(value, svc))
    return value


def container_settings(svc: dict[str, Any], tmp: Path) -> Settings:
    """The settings the container loads (its ROCEWATCH_CONFIG and environment), with the paths
    it names mapped to this checkout's files, so ``check`` reads what the container would."""
    env = container_env(svc)
    config = host_path(env["ROCEWATCH_CONFIG"], svc)
    data = _as_host(yaml.safe_load(config.read_text()), svc)
    mapped = tmp / config.name
    mapped.write_text(yaml.safe_dump(data))
    return load_settings(mapped, env={k: str(_as_host(v, svc)) for k, v in env.items()})
