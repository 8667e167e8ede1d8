"""What a team running the deployment relies on, checked in the template: ingest protected from
bursts, alarms that reach someone, access logs, and a place where every failed async step lands.
"""

from __future__ import annotations

from typing import Any

from tests.aws import cfn

INGEST_ROUTES = ("POST /ingest", "POST /v1/traces", "POST /v1/logs")
TARGET_EVENTS_PER_S = 20_000
SDK_BATCH_EVENTS = 50


def http_api_stage(transformed: dict[str, Any]) -> dict[str, Any]:
    (stage,) = [s["Properties"] for s in
                cfn.resources_of_type(transformed, "AWS::ApiGatewayV2::Stage").values()
                if s["Properties"]["ApiId"] == {"Ref": "HttpApi"}]
    return stage


def default(parameter: str) -> Any:
    return cfn.load_template()["Parameters"][parameter]["Default"]


# ---- ingest protected from bursts ----------------------------------------------------------------


def test_each_ingest_route_has_its_own_throttle_from_the_parameters(
        transformed: dict[str, Any]) -> None:
    settings = http_api_stage(transformed)["RouteSettings"]
    for route in INGEST_ROUTES:
        assert settings[route] == {"ThrottlingRateLimit": {"Ref": "IngestRateLimit"},
                                   "ThrottlingBurstLimit": {"Ref": "IngestBurstLimit"}}, route
    # Every other route keeps the API's default, lower throttle.
    assert set(settings) == set(INGEST_ROUTES)


def test_the_ingest_throttle_defaults_carry_the_target_rate_in_full_batches_with_headroom() -> None:
    needed = TARGET_EVENTS_PER_S / SDK_BATCH_EVENTS  # requests/s
    rate, burst = default("IngestRateLimit"), default("IngestBurstLimit")
    assert rate >= 2 * needed and burst >= rate
    description = cfn.load_template()["Parameters"]["IngestRateLimit"]["Description"]
    assert "20,000 / 50 = 400" in description
    other = cfn.load_template()["Resources"]["HttpApi"]["Properties"]["DefaultRouteSettings"]
    assert other["ThrottlingRateLimit"] < rate


def test_ingest_reserves_concurrency_unless_set_to_zero() -> None:
    template = cfn.load_template()
    ingest = template["Resources"]["IngestFunction"]["Properties"]
    assert ingest["ReservedConcurrentExecutions"] == {"Fn::If": [
        "HasIngestConcurrency", {"Ref": "IngestReservedConcurrency"}, {"Ref": "AWS::NoValue"}]}
    assert template["Conditions"]["HasIngestConcurrency"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "IngestReservedConcurrency"}, 0]}]}
    reserved = default("IngestReservedConcurrency")
    # Enough for the target at 0.1 s a request twice over, and reservable from the default
    # account quota of 1,000 (Lambda keeps 100 unreserved).
    assert TARGET_EVENTS_PER_S / SDK_BATCH_EVENTS * 0.1 * 2 <= reserved <= 900
