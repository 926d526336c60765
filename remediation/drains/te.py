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
from urllib.parse import quote

import httpx

from pipeline.errors import RemediationError
from remediation.settings import TeSettings

REQUESTED_BY = "rocewatch-remediation"


def _summary(answer: dict[str, Any], what: str) -> str:
    changed = "" if answer.get("changed", True) else " (already)"
    version = answer.get("paths_version")
    return f"{what}{changed}" + (f", paths v{version}" if version is not None else "")


class TeController(Protocol):
    def announce(self, link: str, reason: str, evidence: dict[str, Any]) -> str:
        """Before: the link will be drained; move traffic off it."""

    def confirm(self, link: str) -> str:
        """After: the link is down; the controller must still hold the drain."""

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

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None,
              ) -> dict[str, Any]:
        """One request with retries on 5xx, 429 and network errors; the JSON answer."""
        url = f"{self.base}{path}"
        last = ""
        for attempt in range(1, self.settings.attempts + 1):
            try:
                response = self._client.request(method, url, json=body)
            except httpx.TransportError as exc:
                last = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code < 300:
                    try:
                        answer = response.json()
                    except ValueError:
                        answer = {}
                    return answer if isinstance(answer, dict) else {"answer": answer}
                last = f"{response.status_code} {response.text[:300]}"
                if response.status_code < 500 and response.status_code != 429:
                    break  # 404 unknown link, 409 would isolate a switch, 422 bad body
            if attempt < self.settings.attempts:
                time.sleep(min(2.0, 0.2 * 2 ** (attempt - 1)))
        raise RemediationError(f"TE controller {method} {url} failed: {last}")

    def _link_path(self, link: str, verb: str = "") -> str:
        return f"/v1/links/{quote(link, safe='~')}" + (f"/{verb}" if verb else "")

    def announce(self, link: str, reason: str, evidence: dict[str, Any]) -> str:
        response = self._call("POST", self._link_path(link, "drain"), {
            "reason": reason[:1000], "requested_by": REQUESTED_BY, "evidence": evidence})
        return _summary(response, "drained")

    def confirm(self, link: str) -> str:
        """The API has no "after" verb: read the link back and check the controller still holds
        the drain (re-asserting it, idempotently, if it lost it) now that the port is down."""
        state = self._call("GET", self._link_path(link))
        if state.get("drained") is True:
            return f"TE holds the drain (link oper {state.get('oper', '?')})"
        again = self._call("POST", self._link_path(link, "drain"), {
            "reason": "port disabled after drain; re-asserting", "requested_by": REQUESTED_BY})
        return f"TE had lost the drain; re-asserted: {_summary(again, 'drained')}"

    def cancel(self, link: str, reason: str) -> str:
        response = self._call("POST", self._link_path(link, "undrain"), {
            "reason": f"drain abandoned: {reason}"[:1000], "requested_by": REQUESTED_BY})
        return _summary(response, "undrained")

    def restore(self, link: str) -> str:
        response = self._call("POST", self._link_path(link, "undrain"), {
            "reason": "repaired; soak clean", "requested_by": REQUESTED_BY})
        return _summary(response, "undrained")

    def close(self) -> None:
        self._client.close()
