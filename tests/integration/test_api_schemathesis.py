"""Schemathesis against core's OpenAPI description: generated requests, valid and not, with
a worker's token, to a core process running through PgBouncer. None may get a 5xx."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error

from videocopies.embedded.pgbouncer import LocalPgBouncer
from videocopies.embedded.postgres import LocalPostgres
from videocopies.runtime.launch import CoreProcess, issue_token


@pytest.fixture
def core_api(pg_server: LocalPostgres, database: str, pgbouncer: LocalPgBouncer) -> Iterator[tuple[str, str, str]]:
    with CoreProcess(pgbouncer.url(database), listen_url=pg_server.url(database)) as core:
        direct = pg_server.url(database)
        yield core.url, issue_token(direct, "fuzz-worker"), issue_token(direct, "fuzz-control", "control")


def test_no_request_gets_a_server_error(core_api: tuple[str, str, str]) -> None:
    url, worker, control = core_api
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 10
    # Every operation with a worker's token; the operator's ones with a control node's too.
    calls = [(operation, worker) for operation in operations] + [
        (operation, control) for operation in operations if operation.path.startswith("/v1/control/")
    ]

    for operation, token in calls:
        headers = {"Authorization": f"Bearer {token}"}

        @given(case=operation.as_strategy())
        @settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def no_server_error(case: schemathesis.Case) -> None:
            if isinstance(case.body, dict) and isinstance(case.body.get("wait_s"), int | float):
                case.body["wait_s"] = min(case.body["wait_s"], 0.05)  # an empty queue would hold every claim
            case.call_and_validate(
                base_url=url, headers=headers, checks=[not_a_server_error], timeout=10  # noqa: B023 - called at once
            )

        no_server_error()
