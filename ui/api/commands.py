"""Publishing the commands people enter (approve or reject a drain, record a repair, silence,
resume automation) on the bus's ``commands`` topic, where remediation applies them.

The message format is the core's (:mod:`pipeline.wire.commands`); this is the one module of the
read side that knows it, so the API's request bodies are exactly what remediation decodes. The
target is checked against the fabric's naming before anything is published, and the answer to a
command arrives later as an audit record (``action: command``) in ``/v1/actions``.
"""

from __future__ import annotations

import threading
import time

from pipeline.bus.base import Bus, Producer, Topics
from pipeline.wire.commands import Command, command_key, encode_command
from ui.query.params import check_name

__all__ = ["Command", "CommandPublisher"]


class CommandPublisher:
    """Sends validated commands to the commands topic (one producer, shared by requests)."""

    def __init__(self, bus: Bus, topics: Topics) -> None:
        self.topic = topics.commands
        self._bus = bus
        self._producer: Producer | None = None
        self._lock = threading.Lock()
        self.published = 0

    def publish(self, command: Command) -> Command:
        target = getattr(command, "target", "")
        if target:
            check_name(target, "entity")
        if not command.issued_at_ns:
            command = command.model_copy(update={"issued_at_ns": time.time_ns()})
        with self._lock:
            if self._producer is None:
                self._bus.ensure_topics([self.topic])
                self._producer = self._bus.producer()
            self._producer.send(self.topic, encode_command(command), key=command_key(command))
            self._producer.flush(10.0)
            self.published += 1
        return command

    def close(self) -> None:
        with self._lock:
            if self._producer is not None:
                self._producer.close()
                self._producer = None

