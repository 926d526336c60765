"""Telling the TE controller about drains: before (move traffic off), after (the link is down),
on abort (keep using it), and on restore (use it again).

Rule 8 of the drain safety notes (Statesman; Meta's capacity-aware routing): the controller hears
of a drain before anything is touched, so it can re-route over the remaining capacity, and again
once the link is down. The HTTP client follows ``docs/te-controller.md``; failures are
:class:`~pipeline.errors.RemediationError` with what the controller said.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

import httpx

from pipeline.errors import RemediationError
from remediation.settings import TeSettings


class TeController(Protocol):
    def announce(self, link: str, reason: str, evidence: dict[str, Any]) -> str:
        """Before: the link will be drained; move traffic off it."""

    def confirm(self, link: str) -> str:
        """After: the link is down."""

    def cancel(self, link: str, reason: str) -> str:
        """The drain was abandoned before the link went down: keep the link in service."""

    def restore(self, link: str) -> str:
        """After repair and soak: the link may carry traffic again."""


class HttpTe:
    """The TE controller's HTTP API (see ``docs/te-controller.md``)."""

    def __init__(self, base_url: str, settings: TeSettings,
                 client: httpx.Client | None = None) -> None:
        self.base = base_url.rstrip("/")
        self.settings = settings
        headers = {"User-Agent": "rocewatch"}
        token = settings.token.get_secret_value()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._client = client or httpx.Client(timeout=settings.timeout, headers=headers)

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> str:
        url = f"{self.base}{path}"
        last = ""
        for attempt in range(1, self.settings.attempts + 1):
            try:
                response = self._client.request(method, url, json=body)
            except httpx.TransportError as exc:
                last = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code < 300:
                    return f"{method} {path}: {response.status_code} {response.text[:200]}"
                last = f"{response.status_code} {response.text[:200]}"
                if response.status_code < 500 and response.status_code != 429:
                    break
            if attempt < self.settings.attempts:
                time.sleep(min(2.0, 0.2 * 2 ** (attempt - 1)))
        raise RemediationError(f"TE controller {method} {url} failed: {last}")

    def announce(self, link: str, reason: str, evidence: dict[str, Any]) -> str:
        return self._call("POST", f"/v1/links/{link}/drain",
                          {"reason": reason, "evidence": evidence, "requested_by": "rocewatch"})

    def confirm(self, link: str) -> str:
        return self._call("POST", f"/v1/links/{link}/drained", {"requested_by": "rocewatch"})

    def cancel(self, link: str, reason: str) -> str:
        return self._call("POST", f"/v1/links/{link}/undrain",
                          {"reason": f"drain abandoned: {reason}", "requested_by": "rocewatch"})

    def restore(self, link: str) -> str:
        return self._call("POST", f"/v1/links/{link}/undrain",
                          {"reason": "repaired and soaked clean", "requested_by": "rocewatch"})

    def close(self) -> None:
        self._client.close()
