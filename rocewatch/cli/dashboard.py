"""``rocewatch dashboard``: the Streamlit dashboard over the configured API, until Ctrl-C.

The one loader reads the config (``-c`` or ``ROCEWATCH_CONFIG``, then ``ROCEWATCH_...``
variables); the dashboard is told the API's address and its refresh period on its command line and
the command token in its environment (:mod:`ui.dashboard.launch`). It serves on
``dashboard.host:dashboard.port``, in this process (it becomes Streamlit's).
"""

from __future__ import annotations

import os

import click

from rocewatch.cli.main import config_option
from ui.dashboard.launch import DashboardOptions, command, environment


@click.command()
@config_option
@click.option("--api", "api_url", metavar="URL",
              help="The API's URL (default: dashboard.api_url, else api.host:api.port).")
def dashboard(config_path: str | None, api_url: str | None) -> None:
    """The Streamlit dashboard, reading the rocewatch API."""
    from rocewatch.settings import load_settings

    settings = load_settings(config_path)
    board = settings.dashboard
    options = DashboardOptions.from_settings(settings.api, board, url=api_url or "")
    click.echo(f"dashboard on http://{board.host}:{board.port}/ reading {options.api_url}",
               err=True)
    argv = command(options, board.host, board.port)
    # this process becomes the dashboard: signals reach Streamlit, and nothing is left behind
    os.execve(argv[0], argv, environment(options, os.environ))
