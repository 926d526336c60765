"""Where a switch is and how to log in: the runbooks' view of the targets inventory.

This is the one module of remediation that imports the collectors' inventory loader (the lead may
move it into ``pipeline/``; only the import below would change). Addresses come from the targets
file (``remediation.gnmi.targets_file``) or the lab's ``agents.json``
(``remediation.gnmi.lab_agents_file``); ``remediation.gnmi.devices`` (name → host:port) overrides
both. Credentials are the inventory's environment references, read when a session opens.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from pipeline.errors import RemediationError
from pipeline.inventory import Inventory, Target, from_lab, load_inventory, resolve_secrets
from remediation.settings import GnmiSettings


@dataclass(frozen=True)
class Device:
    name: str
    host: str
    port: int
    username: str = ""
    password: str = ""
    ca: str = ""
    cert: str = ""
    key: str = ""
    server_name: str = ""

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


class DeviceDirectory:
    def __init__(self, settings: GnmiSettings, inventory: Inventory | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        self._settings = settings
        self._env = dict(os.environ if env is None else env)
        if inventory is None:
            inventory, lab_env = load(settings)
            self._env = {**lab_env, **self._env}
        self._targets: dict[str, Target] = (
            {t.name: t for t in inventory.targets if t.protocol == "gnmi"} if inventory else {})

    def lookup(self, name: str) -> Device:
        """The device's gNMI address and credentials; RemediationError when it is unknown."""
        s = self._settings
        user, password = s.username, s.password.get_secret_value()
        target = self._targets.get(name)
        if target is not None and not (user or password):
            secrets = resolve_secrets(target, self._env)
            user, password = secrets.username, secrets.password
        if name in s.devices:
            host, _, port = s.devices[name].rpartition(":")
            return Device(name, host.strip("[]"), int(port), user, password)
        if target is None:
            raise RemediationError(
                f"no gNMI address for {name}: add it to the targets inventory "
                "(remediation.gnmi.targets_file) or to remediation.gnmi.devices")
        tls = target.tls
        return Device(name, target.host, target.port, user, password,
                      tls.ca if tls else "", tls.cert if tls else "", tls.key if tls else "",
                      tls.server_name if tls else "")


def load(settings: GnmiSettings) -> tuple[Inventory | None, dict[str, str]]:
    if settings.targets_file:
        return load_inventory(settings.targets_file), {}
    if settings.lab_agents_file:
        return from_lab(settings.lab_agents_file)
    return None, {}
