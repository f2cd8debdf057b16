"""Schemathesis against /openapi.json with a token: every operation, generated inputs
(valid and not), never a 500, and every response is JSON the schema allows.
The streaming endpoints (SSE, open-ended) are exercised in test_api.py instead."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from backends import open_ledger
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
)
from test_api import bearer, serving

from runtime.ledger import Ledger

# the events import takes the export file's bytes as they are (binary, like octet-stream)
schemathesis.serializer.alias("application/x-ndjson", "application/octet-stream")


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[schemathesis.BaseSchema, dict[str, str]]]:
    with open_ledger(f"sqlite:///{tmp_path / 'ledger.sqlite'}", tmp_path) as ledger:
        seed(ledger)
        with serving(ledger) as (url, secrets):
            schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
            yield schema.exclude(path_regex="stream"), bearer(secrets["admin"])


def seed(ledger: Ledger) -> None:
    from datetime import UTC, datetime

    now = datetime(2026, 3, 1, tzinfo=UTC)
    store = ledger.app.register_store(name="Shop", base_url="https://shop.example",
                                      platform="shopify", now=now)
    ledger.app.schedule_job(kind="catalog", url="https://shop.example/p.json", now=now,
                            store_id=store, every=3600)


CHECKS = [not_a_server_error, content_type_conformance, response_schema_conformance]


def test_no_operation_answers_500(api: tuple[schemathesis.BaseSchema, dict[str, str]]) -> None:
    schema, headers = api
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 15
    for operation in operations:
        @given(case=operation.as_strategy())
        @settings(max_examples=40, deadline=None, database=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))
        def check(case: schemathesis.Case) -> None:
            case.call_and_validate(headers=headers, checks=CHECKS)

        check()
