"""What every receiver plugin is: its shape, its delivery errors, its retry knobs, and one JSON
POST that classifies failures the way on-call integrations expect.

A receiver is a ``rocewatch.actions`` entry point: a class with ``name`` and an ``Options`` model,
built as ``cls(instance, options, site=...)``. ``send`` delivers one notification once and
returns a short detail; it raises :class:`DeliveryError` saying whether another try could help.
Retrying is the deliverer's job (:mod:`remediation.receivers.delivery`): 5xx, 429 and network
failures are retried under the retry policy (:mod:`pipeline.retry`; a 429 or 5xx's
``Retry-After`` is honoured, up to ``max_backoff``); any other 4xx is not.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol
from urllib.parse import urlsplit

import httpx
from pydantic import Field, SecretStr, model_validator

from pipeline.config import Strict
from pipeline.errors import ConfigError, RemediationError
from pipeline.retry import RetryPolicy, parse_retry_after
from remediation.alerting.dispatch import ReceiverCaps
from remediation.alerting.notification import Notification
from remediation.settings import Duration


class DeliveryError(RemediationError):
    """One delivery attempt failed; ``retryable`` says whether trying again could succeed."""

    def __init__(self, message: str, retryable: bool, status: int | None = None,
                 retry_after_s: float | None = None) -> None:
        self.retryable = retryable
        self.status = status
        self.retry_after_s = retry_after_s
        super().__init__(message)


class RetryOptions(Strict):
    """Every receiver's retry knobs (wall time: it is about the network, not the fabric)."""

    send_resolved: bool = True
    attempts: int = Field(5, ge=1, le=20)
    backoff: Duration = 0.5
    max_backoff: Duration = 30.0
    timeout: Duration = 10.0

    @model_validator(mode="after")
    def _valid_policy(self) -> RetryOptions:
        try:
            _ = self.policy
        except ConfigError as exc:
            raise ValueError(f"backoff, max_backoff: {exc}") from exc
        return self

    @property
    def policy(self) -> RetryPolicy:
        """The one retry policy (:mod:`pipeline.retry`) with these knobs."""
        return RetryPolicy(initial_s=self.backoff, cap_s=self.max_backoff,
                           max_attempts=self.attempts)


class HttpOptions(RetryOptions):
    url: str = Field(min_length=1)
    #: sent as ``Authorization: Bearer ...``; set it from ROCEWATCH_..., never in the file
    bearer_token: SecretStr = SecretStr("")


class Receiver(Protocol):
    name: ClassVar[str]
    Options: ClassVar[type[Strict]]
    instance: str
    options: RetryOptions

    @property
    def caps(self) -> ReceiverCaps: ...

    def send(self, notification: Notification) -> str:
        """Deliver once; return a short detail; raise DeliveryError on failure."""

    def close(self) -> None: ...


def where(url: str) -> str:
    """A URL without its path and query (webhook URLs often carry the secret in the path)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.netloc else "(no host)"


class JsonPoster:
    """One httpx client per receiver; ``post`` returns the response or raises DeliveryError."""

    def __init__(self, options: HttpOptions, headers: dict[str, str] | None = None) -> None:
        base = {"Content-Type": "application/json", "User-Agent": "rocewatch"}
        token = options.bearer_token.get_secret_value()
        if token:
            base["Authorization"] = f"Bearer {token}"
        base.update(headers or {})
        self._client = httpx.Client(timeout=options.timeout, headers=base)

    def post(self, url: str, body: Any) -> httpx.Response:
        try:
            response = self._client.post(url, json=body)
        except httpx.TransportError as exc:
            raise DeliveryError(f"{where(url)}: {type(exc).__name__}: {exc}",
                                retryable=True) from exc
        code = response.status_code
        if code < 300:
            return response
        text = response.text[:200].replace("\n", " ")
        after = parse_retry_after(response.headers.get("retry-after"))
        if code == 429:
            raise DeliveryError(f"{where(url)}: 429 rate limited: {text}", retryable=True,
                                status=code, retry_after_s=after)
        if code >= 500:
            raise DeliveryError(f"{where(url)}: {code}: {text}", retryable=True, status=code,
                                retry_after_s=after)
        raise DeliveryError(f"{where(url)}: {code} (not retried): {text}", retryable=False,
                            status=code)

    def close(self) -> None:
        self._client.close()


class HttpReceiver:
    """The shape the HTTP receivers share: an instance name, options, one JSON poster, and the
    capabilities their options give. Subclasses declare ``name``/``Options`` and write ``send``."""

    def __init__(self, instance: str, options: HttpOptions, **_: Any) -> None:
        self.instance = instance
        self.options = options
        self._http = JsonPoster(options)

    @property
    def caps(self) -> ReceiverCaps:
        return ReceiverCaps(send_resolved=self.options.send_resolved)

    def close(self) -> None:
        self._http.close()
