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


# ---- alarms ----------------------------------------------------------------------------------------


def alarms(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: v["Properties"] for k, v in
            cfn.resources_of_type(template, "AWS::CloudWatch::Alarm").items()}


def watched(template: dict[str, Any]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """(namespace, metric) -> the dimensions each alarm on it watches."""
    return {(a["Namespace"], a["MetricName"]): a["Dimensions"] for a in alarms(template).values()}


def test_alarms_watch_ingest_failures_and_throttles_eval_failures_and_judge_throttling(
        transformed: dict[str, Any]) -> None:
    metrics = watched(transformed)
    assert metrics[("AWS/ApiGateway", "5xx")] == [{"Name": "ApiId", "Value": {"Ref": "HttpApi"}}]
    ingest = [{"Name": "FunctionName", "Value": {"Ref": "IngestFunction"}}]
    assert metrics[("AWS/Lambda", "Throttles")] == ingest
    assert metrics[("AWS/Lambda", "Errors")] == ingest
    assert metrics[("AWS/States", "ExecutionsFailed")] == [
        {"Name": "StateMachineArn", "Value": {"Ref": "EvalStateMachine"}}]
    resources = transformed["Resources"]
    assert resources["HttpApi"]["Type"] == "AWS::ApiGatewayV2::Api"
    assert resources["IngestFunction"]["Type"] == "AWS::Lambda::Function"
    assert resources["EvalStateMachine"]["Type"] == "AWS::StepFunctions::StateMachine"


def test_the_bedrock_alarm_watches_the_model_id_the_functions_call() -> None:
    template = cfn.load_template()
    ((dimension,),) = [d for (namespace, metric), d in watched(template).items()
                       if (namespace, metric) == ("AWS/Bedrock", "InvocationThrottles")]
    assert dimension["Name"] == "ModelId"
    called = template["Globals"]["Function"]["Environment"]["Variables"]["BENCH_BEDROCK_MODEL"]
    for profile in (True, False):
        conditions = {"HasInferenceProfile": profile}
        assert cfn.resolve(dimension["Value"], template, {}, conditions) == \
            cfn.resolve(called, template, {}, conditions)


def test_every_alarm_notifies_the_topic_when_it_fires_and_clears_and_ignores_idle_time() -> None:
    template = cfn.load_template()
    assert template["Resources"]["AlarmTopic"]["Type"] == "AWS::SNS::Topic"
    found = alarms(template)
    assert len(found) >= 5
    for name, alarm in found.items():
        assert alarm["AlarmActions"] == alarm["OKActions"] == [{"Ref": "AlarmTopic"}], name
        assert alarm["TreatMissingData"] == "notBreaching", name
    assert template["Outputs"]["AlarmTopic"]["Value"] == {"Ref": "AlarmTopic"}


def test_an_alarm_email_is_subscribed_only_when_given() -> None:
    template = cfn.load_template()
    assert template["Parameters"]["AlarmEmail"]["Default"] == ""
    (subscription,) = cfn.resources_of_type(template, "AWS::SNS::Subscription").values()
    assert subscription["Condition"] == "HasAlarmEmail"
    assert subscription["Properties"] == {"TopicArn": {"Ref": "AlarmTopic"}, "Protocol": "email",
                                          "Endpoint": {"Ref": "AlarmEmail"}}
    assert template["Conditions"]["HasAlarmEmail"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "AlarmEmail"}, ""]}]}
