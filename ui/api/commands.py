"""Publishing the commands people enter (approve or reject a drain, record a repair, silence,
resume automation) on the bus's ``commands`` topic, where remediation applies them.

The message format is the core's (:mod:`pipeline.wire.commands`); this is the one module of the
read side that knows it. A request body is a command without the fields the API fills in itself
(:data:`SERVER_FIELDS`): the actor ``by`` is the identity of the request's token, never a name the
client typed, and ``issued_at_ns`` is the API's clock. The request models are derived from the
wire models (same fields, same bounds; ``kind`` required), and the command is validated by the
wire model itself, so what the API accepts is exactly what remediation decodes. The target is
checked against the fabric's naming, and the encoded message against what the bus takes, before
anything is published; the answer to a command arrives later as an audit record
(``action: command``) in ``/v1/actions``.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Annotated, Any, Union, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from pipeline.bus.base import Bus, Producer, Topics
from pipeline.errors import QueryError
from pipeline.wire.commands import Command, command_key, encode_command
from pipeline.wire.items import describe
from ui.query.params import check_name

__all__ = ["SERVER_FIELDS", "Command", "CommandPublisher", "CommandRequest", "build"]

#: the fields of a command the API sets itself: a body that sends one is refused
SERVER_FIELDS = ("version", "by", "issued_at_ns")
#: what a Kafka record adds to its key and value (batch and record headers), with room to spare
_RECORD_OVERHEAD = 256

_WIRE: tuple[type[BaseModel], ...] = get_args(get_args(Command)[0])


def _request_model(wire: type[BaseModel]) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for name, info in wire.model_fields.items():
        if name in SERVER_FIELDS:
            continue
        # kind is required in a request: it says which command it is
        fields[name] = (info.annotation, Field(...) if name == "kind" else info)
    model: type[BaseModel] = create_model(
        wire.__name__, __config__=ConfigDict(extra="forbid", title=wire.__name__),
        __doc__=wire.__doc__, __module__=__name__, **fields)
    return model


_REQUESTS = tuple(_request_model(w) for w in _WIRE)

if TYPE_CHECKING:
    CommandRequest = BaseModel
else:
    #: the body of ``POST /v1/commands``: one command, chosen by ``kind``
    CommandRequest = Annotated[Union[_REQUESTS], Field(discriminator="kind")]  # noqa: UP007


def build(request: BaseModel, by: str) -> Command:
    """The wire command of a request, given by the identity ``by``; QueryError says what is
    wrong with it (the wire model's own checks, such as a silence's matchers)."""
    fields = {**request.model_dump(exclude_unset=True), "kind": getattr(request, "kind", ""),
              "by": by, "issued_at_ns": time.time_ns()}
    wire = dict(zip(_REQUESTS, _WIRE, strict=True))[type(request)]
    try:
        command: Command = wire(**fields)  # type: ignore[assignment]
    except ValidationError as exc:
        raise QueryError(f"bad {fields['kind']} command: {describe(exc)}") from None
    return command


class CommandPublisher:
    """Sends validated commands to the commands topic (one producer, shared by requests);
    ``max_message_bytes`` is the largest message the bus takes (None: no limit)."""

    def __init__(self, bus: Bus, topics: Topics, max_message_bytes: int | None = None) -> None:
        self.topic = topics.commands
        self.max_message_bytes = max_message_bytes
        self._bus = bus
        self._producer: Producer | None = None
        self._lock = threading.Lock()
        self.published = 0

    def publish(self, command: Command) -> Command:
        target = getattr(command, "target", "")
        if target:
            check_name(target, "entity")
        value = encode_command(command)
        key = command_key(command)
        size = len(value) + len(key or b"") + _RECORD_OVERHEAD
        if self.max_message_bytes is not None and size > self.max_message_bytes:
            raise QueryError(f"this {command.kind} command is {size:,} bytes on the bus, which "
                             f"takes at most {self.max_message_bytes:,} "
                             "(bus.kafka.max_message_bytes): shorten its comment")
        with self._lock:
            if self._producer is None:
                self._bus.ensure_topics([self.topic])
                self._producer = self._bus.producer()
            self._producer.send(self.topic, value, key=key)
            self._producer.flush(10.0)
            self.published += 1
        return command

    def close(self) -> None:
        with self._lock:
            if self._producer is not None:
                self._producer.close()
                self._producer = None
