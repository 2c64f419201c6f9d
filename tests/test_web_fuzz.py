"""Property-based fuzzing of the web page's JSON API against the OpenAPI schema the server
publishes (/api/openapi.json), with schemathesis and the in-process ASGI application.

Every operation of every router in cli_org/faces/web/pages is one test (a page added later is
fuzzed without touching this file), and each must be in the published schema. Per
operation, a bounded number of valid and of invalid requests (CLI_ORG_FUZZ_EXAMPLES each,
default 15): no answer may be a 5xx, every answer's status and content type must be ones
the schema documents, and every documented body must match its schema. The database is a
real one with facts, a superseded fact and a pin, so ids 1..4 hit real rows.
"""

from __future__ import annotations

import os

import pytest

from tests.databases import fresh_database, with_team

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("test_web_fuzz")]

EXAMPLES = int(os.environ.get("CLI_ORG_FUZZ_EXAMPLES", "15"))
HOST = "127.0.0.1:8765"  # the loopback address the app is made for (the Host guard stays on)
TOKEN = "a-token-for-the-fuzzer-" + "x" * 16  # every request carries it, as an API client does
HEADERS = {"Host": HOST, "Authorization": f"Bearer {TOKEN}"}


def _operations() -> list[tuple[str, str]]:
    """(METHOD, path) of every /api route the routers publish."""
    from fastapi.routing import APIRoute

    from cli_org.faces.web.pages import ROUTERS

    found = []
    for router in ROUTERS:
        for route in router.routes:
            if isinstance(route, APIRoute) and route.include_in_schema:
                found += [(method, route.path_format) for method in sorted(route.methods)]  # {name:path} as {name}
    return found


@pytest.fixture(scope="module")
def api(server, template):
    """The schemathesis schema of an app serving as `lead` over a database with data."""
    import schemathesis

    from cli_org.faces.web.app import create_app, opened
    from cli_org.faces.web.guard import hosts_for
    from cli_org.store.facts import remember
    from cli_org.store.pins import pin

    with fresh_database(server, template) as blank:
        org = with_team(blank)
        with org.as_agent("bot") as conn:
            old = remember(conn, "retention", "Logs are kept for 30 days.", source="#ops-1").id
            remember(conn, "retention", "Logs are kept for 90 days.", source="#ops-2", supersedes=old)
            remember(conn, "<b>x</b>", "A claim with <script>alert(1)</script> in it.", source="#sec-1")
        with org.as_agent("other") as conn:
            kept = remember(conn, "billing", "Invoices go out on the first working day.", source="#fin-1").id
        with org.as_agent("boss") as conn:
            pin(conn, kept)
        with opened(org.settings, "lead", token=TOKEN, hosts=hosts_for("127.0.0.1", 8765)) as web:
            app = create_app(web)
            yield schemathesis.openapi.from_asgi("/api/openapi.json", app, headers=HEADERS)


def _fuzz(operation, mode, checks: list) -> None:
    """EXAMPLES requests of `mode` against `operation`, each answer put through `checks`."""
    from hypothesis import HealthCheck, given, settings

    @settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(case=operation.as_strategy(generation_mode=mode))
    def fuzz(case) -> None:
        response = case.call(headers=HEADERS)
        case.validate_response(response, checks=checks)

    fuzz()


@pytest.mark.parametrize(("method", "path"), _operations(), ids=[f"{m} {p}" for m, p in _operations()])
def test_no_operation_answers_5xx_or_off_its_schema(api, method, path):
    from hypothesis.errors import Unsatisfiable
    from schemathesis.checks import not_a_server_error
    from schemathesis.generation import GenerationMode
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        response_schema_conformance,
        status_code_conformance,
    )

    assert path in api.raw_schema["paths"], f"{method} {path} is served but not in /api/openapi.json"
    operation = api[path][method]
    answers = [not_a_server_error, status_code_conformance, content_type_conformance]
    # Valid requests: their bodies must match the schema too. Invalid ones: refused, not 5xx.
    _fuzz(operation, GenerationMode.POSITIVE, [*answers, response_schema_conformance])
    try:
        _fuzz(operation, GenerationMode.NEGATIVE, answers)
    except Unsatisfiable:
        # No parameter and no body (GET /api/agents): there is no invalid request to make.
        assert not api.raw_schema["paths"][path][method.lower()].get("parameters")


def test_a_write_that_is_not_json_is_refused_as_the_schema_documents(org, web):
    """Found by the fuzzer: a body-less POST (unpin takes no body) is refused with 415, which
    the schema did not document; every /api write now lists it."""
    from cli_org.store.facts import remember

    with org.as_agent("bot") as conn:
        fid = remember(conn, "cache", "The cache holds an hour of results.", source="#t-1").id
    client = web("boss")
    assert client.post(f"/api/facts/{fid}/unpin").status_code == 415
    assert client.post(f"/api/facts/{fid}/pin", headers={"Content-Type": "application/json"}).status_code == 200
    assert client.post(f"/api/facts/{fid}/unpin", headers={"Content-Type": "application/json"}).status_code == 200
    paths = client.get("/api/openapi.json").json()["paths"]
    for path, methods in paths.items():
        if "post" in methods:
            assert "415" in methods["post"]["responses"], f"POST {path} does not document 415"


def test_a_filter_the_library_refuses_is_a_documented_400(web):
    """Found by the fuzzer: a filter with a NUL character is refused (400), which the schema
    did not list for the list operations."""
    client = web("boss")
    for path in ("/api/facts", "/api/pins"):
        got = client.get(path, params={"project": "a\x00b"})
        assert got.status_code == 400 and set(got.json()) == {"error"}, (path, got.status_code)
    paths = client.get("/api/openapi.json").json()["paths"]
    assert "400" in paths["/api/facts"]["get"]["responses"] and "400" in paths["/api/pins"]["get"]["responses"]
