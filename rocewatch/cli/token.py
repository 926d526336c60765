"""``rocewatch token ...``: mint an API token and print the line that lets the API honour it.

The token is printed once, to hand to its holder; the API keeps only its SHA-256, in the line
printed for ``access.tokens`` (the config, or the file ``access.tokens_file`` names). Who may do
what, and why a plain SHA-256 is enough for a 256-bit random token, is :mod:`ui.api.access`.
"""

from __future__ import annotations

import json

import click
from pydantic import ValidationError

from pipeline.errors import ConfigError
from ui.api.access import ROLES, TokenEntry, mint, token_hash


@click.group()
def token() -> None:
    """API tokens: identities with roles (viewer, operator, admin)."""


@token.command("mint")
@click.argument("name")
@click.option("--role", type=click.Choice(ROLES), default="viewer", show_default=True,
              help="viewer reads; operator also gives commands; admin also resumes automation.")
@click.option("--json", "as_json", is_flag=True, help="Print {token, entry} as JSON.")
def mint_token(name: str, role: str, as_json: bool) -> None:
    """Mint a token for the identity NAME (recorded as the actor of its commands)."""
    secret = mint()
    try:
        entry = TokenEntry(name=name, role=role, sha256=token_hash(secret))
    except ValidationError:
        raise ConfigError(f"{name!r} is not a valid identity name: letters, digits and "
                          ". _ @ + - (at most 64, starting with a letter or digit)") from None
    if as_json:
        click.echo(json.dumps({"token": secret, "entry": entry.model_dump()}))
        return
    click.echo(f"token for {name} ({role}); it is shown only this once, so hand it over now:\n"
               f"  {secret}\n"
               "the line that lets the API honour it, for access.tokens (in the config, or in "
               "the file access.tokens_file names):\n"
               f"  {entry.line()}")
