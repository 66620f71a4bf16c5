"""The service against a property-based fuzzer driven by its own OpenAPI schema (schemathesis): whatever the
request, no answer is a server error (5xx). Bounded: a few dozen examples per operation."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi")
schemathesis = pytest.importorskip("schemathesis")

from hypothesis import HealthCheck, settings  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402

from tests.mluke.serve_fixtures import make_app  # noqa: E402

#: Examples per operation: enough to reach every field's wrong types and edge values, few enough for seconds.
EXAMPLES = 25

schema = schemathesis.pytest.from_fixture("served_schema")


@pytest.fixture(scope="module")
def served_schema(tiny_demo, embedded_db_path):
    return schemathesis.openapi.from_asgi("/openapi.json", make_app(tiny_demo, embedded_db_path))


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
def test_no_request_gets_a_server_error(case):
    response = case.call()
    assert response.status_code < 500, f"{case.method} {case.path}: {response.status_code} {response.text[:300]}"
    case.validate_response(response, checks=[not_a_server_error])
