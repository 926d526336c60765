"""Commands people give remediation (a core message type: the API publishes them on the commands
topic, remediation applies them): approve or reject a pending runbook,
record a repair, drain a link (or isolate a host) for maintenance, add or expire a silence,
resume automation after a halt.

One JSON object per message (``kind`` says which), keyed by ``target`` when there is one. The UI
publishes them; the router applies them on event time and answers each with an audit record
(``action: command``), so a person sees whether their command took. A message holds one command,
so it is the message's only item (:mod:`pipeline.wire.items`): a value that is not a valid command
raises :class:`~pipeline.errors.DecodeError` with the reason; remediation refuses it (an audit
record and a dead letter) and goes on.

Example::

    {"version": 1, "kind": "approve", "target": "leaf2~spine1", "by": "alice",
     "comment": "checked the optics report", "id": "7f0c..."}
"""

from __future__ import annotations

import uuid
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from pipeline.errors import ConfigError, DecodeError
from pipeline.matchers import parse_matchers
from pipeline.times import MAX_INSTANT_NS
from pipeline.wire.items import describe, parse_object

VERSION = 1


class _Command(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Literal[1] = 1
    #: unique per command; a command delivered twice is applied once
    id: str = Field(default_factory=lambda: uuid.uuid4().hex, min_length=1, max_length=64,
                    pattern=r"^[A-Za-z0-9._-]+$")
    by: str = Field(min_length=1, max_length=200)
    comment: str = Field("", max_length=2000)
    #: wall-clock time the person issued it (informational; remediation runs on event time)
    issued_at_ns: int = Field(0, ge=0, lt=MAX_INSTANT_NS)


class Approve(_Command):
    """Let a runbook awaiting approval on ``target`` go ahead (guards are checked again)."""

    kind: Literal["approve"] = "approve"
    target: str = Field(min_length=1, max_length=128)
    run: str = Field("", max_length=64)


class Reject(_Command):
    """Refuse a runbook awaiting approval on ``target``."""

    kind: Literal["reject"] = "reject"
    target: str = Field(min_length=1, max_length=128)
    run: str = Field("", max_length=64)


class Repair(_Command):
    """A repair was done on a drained link or isolated host: enable it and start the soak."""

    kind: Literal["repair"] = "repair"
    target: str = Field(min_length=1, max_length=128)
    #: what was done (clean connector, replace optic, replace cable, reboot host ...)
    action: str = Field(min_length=1, max_length=200)


class Drain(_Command):
    """Drain a fabric link (or isolate a host) for maintenance: remediation's runbook runs it
    at once, as if approved (its guards still apply); a ``repair`` command brings it back."""

    kind: Literal["drain"] = "drain"
    target: str = Field(min_length=1)


class Silence(_Command):
    """Mute notifications of alerts matching every matcher, from ``starts_ns`` (0: now) to
    ``ends_ns`` (event time, ns)."""

    kind: Literal["silence"] = "silence"
    matchers: tuple[Annotated[str, Field(max_length=256)], ...] = Field(min_length=1,
                                                                        max_length=16)
    starts_ns: int = Field(0, ge=0, lt=MAX_INSTANT_NS)
    ends_ns: int = Field(gt=0, lt=MAX_INSTANT_NS)

    @field_validator("matchers")
    @classmethod
    def _parse(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        try:
            parse_matchers(value)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        return value


class ExpireSilence(_Command):
    kind: Literal["expire_silence"] = "expire_silence"
    silence_id: str = Field(min_length=1, max_length=64)


class Resume(_Command):
    """Clear the stop-automation latch set when too much looked broken at once."""

    kind: Literal["resume"] = "resume"


Command = Annotated[Approve | Reject | Repair | Drain | Silence | ExpireSilence | Resume,
                    Field(discriminator="kind")]
_ADAPTER: TypeAdapter[Command] = TypeAdapter(Command)


def decode_command(value: bytes | None) -> Command:
    """Parse one command message; DecodeError says what is wrong with it."""
    raw = parse_object(value, "command")
    try:
        return _ADAPTER.validate_python(raw)
    except ValidationError as exc:
        kind = raw.get("kind")
        raise DecodeError(f"bad {kind[:40] if isinstance(kind, str) else 'command'} command: "
                          f"{describe(exc, tag=kind)}") from None


def encode_command(command: Command) -> bytes:
    return command.model_dump_json().encode()


def command_key(command: Command) -> bytes | None:
    target = getattr(command, "target", "")
    return target.encode() if target else None
