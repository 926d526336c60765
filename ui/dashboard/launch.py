"""The dashboard's command line: what ``streamlit run ui/dashboard/app.py -- ...`` accepts, and how
whoever starts the dashboard spells it (``rocewatch dashboard``, ``rocewatch up``).

The dashboard reads no configuration of its own: the front door loads the one config and passes
``--api URL`` (where the API answers) and ``--refresh SECONDS`` (the live part's default period).
The API token is a secret, so it never goes on a command line (other users can read those): it
comes in the environment as ``ROCEWATCH_API__TOKEN``, the variable that sets ``api.token`` for
every rocewatch process.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pipeline.config import ENV_PREFIX, ApiSettings, DashboardSettings
from pipeline.errors import ConfigError
from ui.api.client import DEFAULT_URL, api_url

#: the Streamlit script
APP = Path(__file__).with_name("app.py")
#: the environment variable holding the API token
TOKEN_ENV = f"{ENV_PREFIX}API__TOKEN"


@dataclass(frozen=True)
class DashboardOptions:
    """What the dashboard process was told: the API's URL, the refresh period, the token."""

    api_url: str = DEFAULT_URL
    refresh_s: float = DashboardSettings().refresh_s
    token: str = ""

    @classmethod
    def from_settings(cls, api: ApiSettings, dashboard: DashboardSettings,
                      url: str = "") -> DashboardOptions:
        """The options of a dashboard over the configured API (``url`` names another)."""
        return cls(url or api_url(api, dashboard), dashboard.refresh_s,
                   api.token.get_secret_value())


def parse(argv: Sequence[str], env: Mapping[str, str]) -> DashboardOptions:
    """The options after ``--`` (``sys.argv[1:]`` of the script) and the token from ``env``."""
    defaults = DashboardOptions()
    url = _value(argv, "--api") or defaults.api_url
    refresh = _value(argv, "--refresh")
    try:
        refresh_s = float(refresh) if refresh is not None else defaults.refresh_s
    except ValueError:
        raise ConfigError(f"--refresh wants seconds, like 2; got {refresh!r}") from None
    if not refresh_s > 0:
        raise ConfigError(f"--refresh must be positive, got {refresh}")
    return DashboardOptions(url, refresh_s, env.get(TOKEN_ENV, ""))


def _value(argv: Sequence[str], flag: str) -> str | None:
    """The value after ``flag`` (``--flag VALUE`` or ``--flag=VALUE``); None when absent."""
    for i, arg in enumerate(argv):
        if arg == flag:
            if i + 1 >= len(argv):
                raise ConfigError(f"{flag} needs a value")
            return argv[i + 1]
        if arg.startswith(flag + "="):
            return arg[len(flag) + 1:]
    return None


def command(options: DashboardOptions, host: str, port: int) -> list[str]:
    """The command that serves the dashboard on ``host:port`` with ``options`` (run it with
    :func:`environment`, which carries the token); no file watcher (a served page does not
    change under it)."""
    return [sys.executable, "-m", "streamlit", "run", str(APP),
            "--server.headless", "true", "--server.address", host, "--server.port", str(port),
            "--browser.gatherUsageStats", "false", "--client.toolbarMode", "viewer",
            "--server.fileWatcherType", "none",
            "--", "--api", options.api_url, "--refresh", f"{options.refresh_s:g}"]


def environment(options: DashboardOptions, base: Mapping[str, str]) -> dict[str, str]:
    """``base`` with the token of ``options`` (and no other)."""
    env = {k: v for k, v in base.items() if k != TOKEN_ENV}
    if options.token:
        env[TOKEN_ENV] = options.token
    return env
