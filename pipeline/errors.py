"""The one exception tree of rocewatch.

Every error rocewatch raises on purpose derives from :class:`RocewatchError`. The CLI turns any of
them into a one-line message and a non-zero exit code; anything else is a bug and keeps its
traceback::

    RocewatchError
    ├── ConfigError          a config, targets or scenario file is wrong (names the key path)
    ├── PluginError          an unknown plugin name, or a plugin's options are wrong
    ├── DecodeError          bytes on a bus or from a device that cannot be decoded
    ├── BusError             the bus cannot publish or deliver
    ├── StoreError           the store refused a statement or is unreachable
    ├── CollectorError       a target misbehaved (session, protocol, credentials)
    ├── LabError             the simulated fabric cannot do what was asked
    ├── RemediationError     a receiver or runbook step failed
    │   └── GuardRefused     a guard refused an action (the reason says which and why)
    └── QueryError           a read-side request is invalid (bad metric, range, step)
        └── AccessDenied     the API refused the request's token (401) or its role (403)
"""

from __future__ import annotations


class RocewatchError(Exception):
    """Base of every error rocewatch raises deliberately."""

    exit_code: int = 1


class ConfigError(RocewatchError):
    """A configuration value is wrong; ``path`` names the key (``collectors[0].targets``)."""

    exit_code = 2

    def __init__(self, message: str, path: str = "") -> None:
        self.path = path
        text = f"{path}: {message}" if path else message
        # one line, whatever a file's keys or values hold: control characters are shown escaped
        super().__init__(text if text.isprintable() else "".join(
            c if c.isprintable() else repr(c)[1:-1] for c in text))


class PluginError(RocewatchError):
    """A plugin could not be found or built."""

    exit_code = 2


class DecodeError(RocewatchError):
    """Bytes that should hold a known payload do not."""


class BusError(RocewatchError):
    """The bus failed to publish or deliver."""


class StoreError(RocewatchError):
    """The store failed a statement or cannot be reached."""


class CoordinationError(RocewatchError):
    """ZooKeeper, through which the processes of a role share work, cannot be reached."""


class CollectorError(RocewatchError):
    """A collector could not talk to a target."""


class LabError(RocewatchError):
    """The simulated fabric cannot do what was asked."""


class RemediationError(RocewatchError):
    """A receiver or a runbook step failed."""


class GuardRefused(RemediationError):
    """A safety guard refused an action; ``guard`` names it."""

    def __init__(self, guard: str, reason: str) -> None:
        self.guard = guard
        self.reason = reason
        super().__init__(f"{guard}: {reason}")


class QueryError(RocewatchError):
    """A read-side request is invalid."""

    exit_code = 2


class AccessDenied(QueryError):
    """The API refused a request's token: none or an unknown one (``status`` 401), or its role
    may not do this (403)."""

    def __init__(self, message: str, status: int = 401) -> None:
        self.status = status
        super().__init__(message)
