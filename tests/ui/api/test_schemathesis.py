"""Schemathesis against our own OpenAPI document, on the live API (uvicorn on loopback), within a
bounded budget: generated requests (valid and invalid) on every operation, with an admin's token,
never get a 5xx, and every answer is one the document declares, in the shape it declares."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import negative_data_rejection, positive_data_acceptance

from pipeline.bus.base import Topics
from pipeline.bus.memory import MemoryBus
from tests.ui.api.conftest import TOKENS, entries
from tests.ui.conftest import FabricStore, fabric_query
from ui.api.access import AccessSettings, Tokens
from ui.api.app import ApiStats, create_app
from ui.api.commands import CommandPublisher
from ui.api.server import Running, start_background

#: generated cases per operation (15 operations): the budget of this test
EXAMPLES = 25
#: the document says a name is a string and a metric one of the catalog's names in words, and
#: the API refuses a string that is not one with a 400 saying so: schema-valid, yet refused; and
#: a query string holds only strings, so a "negative" boolean false arrives as the valid name
#: "false"
EXCLUDED = [positive_data_acceptance, negative_data_rejection]


@pytest.fixture(scope="module")
def fuzzed_api(fabric_store: FabricStore) -> Iterator[Running]:
    stats = ApiStats()
    app = create_app(fabric_query(fabric_store),
                     publisher=CommandPublisher(MemoryBus(partitions=1, capacity=100_000),
                                                Topics()),
                     tokens=Tokens(AccessSettings(read="token", tokens=entries())), stats=stats)
    running = start_background(app)
    yield running
    running.stop()
    print(f"\nschemathesis: {stats.requests} requests, {stats.client_errors} refused "
          f"({stats.refused} at the gate), {stats.server_errors} 5xx, {stats.commands} commands")


def document() -> dict[str, object]:
    """The OpenAPI document the API serves (built by the same code, without a store)."""
    app = create_app(None,  # type: ignore[arg-type]
                     publisher=CommandPublisher(MemoryBus(), Topics()))
    return app.openapi()


# (schemathesis.pytest.from_fixture does not run on pytest 9: the document is built here, the
# requests go to the live API)
schema = schemathesis.openapi.from_dict(document())


@schema.auth()
class Admin:
    """An admin's token on every generated request (schemathesis leaves it off when it tests
    what a request without one gets)."""

    def get(self, case: schemathesis.Case, context: schemathesis.AuthContext) -> str:
        return TOKENS["admin"]

    def set(self, case: schemathesis.Case, data: str,
            context: schemathesis.AuthContext) -> None:
        case.headers = {**(case.headers or {}), "Authorization": f"Bearer {data}"}


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
def test_no_generated_request_gets_a_5xx(case: schemathesis.Case, fuzzed_api: Running) -> None:
    response = case.call_and_validate(base_url=fuzzed_api.url, timeout=60,
                                      excluded_checks=EXCLUDED)
    assert response.status_code < 500, response.text
