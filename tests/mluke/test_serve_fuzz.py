"""The service against a property-based fuzzer driven by its own OpenAPI schema (schemathesis): whatever the
request, no answer is a server error (5xx). Bounded: a few dozen examples per operation, derandomized."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi")
schemathesis = pytest.importorskip("schemathesis")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402

from tests.mluke.serve_fixtures import make_app  # noqa: E402

#: Examples per operation: enough to reach every field's wrong types and edge values, few enough for seconds.
EXAMPLES = 25


@pytest.fixture(scope="module")
def served_schema(tiny_demo, embedded_db_path):
    return schemathesis.openapi.from_asgi("/openapi.json", make_app(tiny_demo, embedded_db_path))


def test_no_request_gets_a_server_error(served_schema):
    operations = [result.ok() for result in served_schema.get_all_operations()]
    assert len(operations) >= 9  # every endpoint of the schema is fuzzed
    errors = []
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
        def fuzz(case):
            response = case.call()
            if response.status_code >= 500:
                errors.append(f"{case.method} {case.path}: {response.status_code} {response.text[:300]}")
            case.validate_response(response, checks=[not_a_server_error])

        fuzz()
    assert not errors, "\n".join(errors)
