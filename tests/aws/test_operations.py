"""What a team running the deployment relies on, checked in the template: ingest protected from
bursts, alarms that reach someone, access logs, and a place where every failed async step lands.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.aws import cfn, test_statemachines
from tests.aws.test_statemachines import Sfn, definition, error, invocations, states_of
from tests.perf.load_model import Mix

sfn = test_statemachines.sfn  # the state machines on moto, as test_statemachines runs them

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


def test_the_ingest_throttle_defaults_carry_the_load_models_requests_with_headroom() -> None:
    mix = Mix()
    assert mix.events_per_s == TARGET_EVENTS_PER_S
    needed = mix.requests_per_s()  # small requests included: more than events / 50
    assert needed > TARGET_EVENTS_PER_S / SDK_BATCH_EVENTS
    rate, burst = default("IngestRateLimit"), default("IngestBurstLimit")
    assert rate >= 2 * needed and burst >= rate
    description = cfn.load_template()["Parameters"]["IngestRateLimit"]["Description"]
    assert f"{needed:,.0f} requests/s" in description
    other = cfn.load_template()["Resources"]["HttpApi"]["Properties"]["DefaultRouteSettings"]
    assert other["ThrottlingRateLimit"] < rate


def test_each_key_has_a_share_of_the_ingest_routes_that_carries_the_hot_agent() -> None:
    """The per-key limit reaches the function, lets the load model's hot agent through
    (2,000 events/s in 50-event batches) and keeps a runaway key to a small part of the
    route."""
    env = cfn.load_template()["Resources"]["IngestFunction"]["Properties"]["Environment"]
    assert env["Variables"]["BENCH_INGEST_KEY_RATE"] == {"Ref": "IngestKeyRateLimit"}
    per_key = default("IngestKeyRateLimit")
    assert 2 * Mix().hot_rates()["sdk batch"] <= per_key <= default("IngestRateLimit") / 10


def test_ingest_reserves_concurrency_unless_set_to_zero() -> None:
    template = cfn.load_template()
    ingest = template["Resources"]["IngestFunction"]["Properties"]
    assert ingest["ReservedConcurrentExecutions"] == {"Fn::If": [
        "HasIngestConcurrency", {"Ref": "IngestReservedConcurrency"}, {"Ref": "AWS::NoValue"}]}
    assert template["Conditions"]["HasIngestConcurrency"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "IngestReservedConcurrency"}, 0]}]}
    # A first deploy works on any account (a new one's quota may be 10, and Lambda keeps 100
    # unreserved); the value the description recommends carries the target at 0.1 s a request
    # twice over and is reservable from the usual quota of 1,000.
    assert default("IngestReservedConcurrency") == 0
    description = template["Parameters"]["IngestReservedConcurrency"]["Description"]
    recommended = int(re.search(r"Set (\d+) where", description)[1])  # type: ignore[index]
    assert Mix().requests_per_s() * 0.1 * 2 <= recommended <= 900


# ---- alarms ----------------------------------------------------------------------------------------


def alarms(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: v["Properties"] for k, v in
            cfn.resources_of_type(template, "AWS::CloudWatch::Alarm").items()}


def watched(template: dict[str, Any]) -> dict[tuple[str, str], list[list[dict[str, Any]]]]:
    """(namespace, metric) -> the dimensions of each alarm on it."""
    found: dict[tuple[str, str], list[list[dict[str, Any]]]] = {}
    for alarm in alarms(template).values():
        found.setdefault((alarm["Namespace"], alarm["MetricName"]), []).append(alarm["Dimensions"])
    return found


def test_alarms_watch_ingest_failures_and_throttles_the_eval_backlog_and_its_dead_letters(
        transformed: dict[str, Any]) -> None:
    metrics = watched(transformed)
    assert [{"Name": "ApiId", "Value": {"Ref": "HttpApi"}}] in metrics[("AWS/ApiGateway", "5xx")]
    ingest = [{"Name": "FunctionName", "Value": {"Ref": "IngestFunction"}}]
    assert ingest in metrics[("AWS/Lambda", "Throttles")]
    assert ingest in metrics[("AWS/Lambda", "Errors")]
    assert [{"Name": "QueueName", "Value": {"Fn::GetAtt": ["EvalQueue", "QueueName"]}}] in \
        metrics[("AWS/SQS", "ApproximateAgeOfOldestMessage")]
    assert [{"Name": "QueueName", "Value": {"Fn::GetAtt": ["EvalDeadLetters", "QueueName"]}}] in \
        metrics[("AWS/SQS", "ApproximateNumberOfMessagesVisible")]
    resources = transformed["Resources"]
    assert resources["HttpApi"]["Type"] == "AWS::ApiGatewayV2::Api"
    assert resources["IngestFunction"]["Type"] == "AWS::Lambda::Function"
    assert {resources[q]["Type"] for q in ("EvalQueue", "EvalDeadLetters")} == {"AWS::SQS::Queue"}


def test_the_bedrock_alarm_watches_the_model_id_the_functions_call() -> None:
    template = cfn.load_template()
    ((dimension,),) = watched(template)[("AWS/Bedrock", "InvocationThrottles")]
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


# ---- access logs and failed async work -------------------------------------------------------------


def test_the_http_api_logs_every_request_as_json_to_a_log_group_with_retention(
        transformed: dict[str, Any]) -> None:
    settings = http_api_stage(transformed)["AccessLogSettings"]
    assert settings["DestinationArn"] == {"Fn::GetAtt": ["ApiAccessLogs", "Arn"]}
    fields = json.loads(settings["Format"])
    assert {"requestId", "route", "status", "latencyMs", "integrationError"} <= set(fields)
    assert all(v.startswith("$context.") for v in fields.values())
    group = transformed["Resources"]["ApiAccessLogs"]
    assert group["Type"] == "AWS::Logs::LogGroup"
    assert group["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}


DLQ_ARN = {"Fn::GetAtt": ["AsyncFailures", "Arn"]}


def test_every_function_invoked_asynchronously_keeps_its_failures_in_the_dlq(
        transformed: dict[str, Any]) -> None:
    """A function another function names in its environment is invoked by it (asynchronously:
    the live push); each needs an on-failure destination its role may send to."""
    resources = transformed["Resources"]
    functions = cfn.functions(transformed)
    invoked = {value["Ref"] for f in functions
               for value in resources[f]["Properties"].get("Environment", {})
               .get("Variables", {}).values()
               if isinstance(value, dict) and value.get("Ref") in functions}
    assert "LivePushFunction" in invoked
    configs = {c["Properties"]["FunctionName"]["Ref"]: c["Properties"] for c in
               cfn.resources_of_type(transformed, "AWS::Lambda::EventInvokeConfig").values()}
    for function in invoked:
        on_failure = configs[function]["DestinationConfig"]["OnFailure"]
        assert on_failure["Destination"] == DLQ_ARN, function
        granted = [s for s in cfn.role_statements(transformed, functions[function].role)
                   if "sqs:SendMessage" in cfn.as_list(s["Action"])]
        assert granted and all(s["Resource"] == DLQ_ARN for s in granted), function


def test_every_schedule_sends_what_it_could_not_start_to_the_dlq(
        transformed: dict[str, Any]) -> None:
    rules = cfn.resources_of_type(transformed, "AWS::Events::Rule")
    assert rules
    for name, rule in rules.items():
        for target in rule["Properties"]["Targets"]:
            assert target["DeadLetterConfig"] == {"Arn": DLQ_ARN}, name
    (policy,) = cfn.resources_of_type(transformed, "AWS::SQS::QueuePolicy").values()
    (statement,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert statement["Principal"] == {"Service": "events.amazonaws.com"}
    assert statement["Action"] == "sqs:SendMessage" and statement["Resource"] == DLQ_ARN
    assert "aws:SourceArn" in statement["Condition"]["ArnLike"]


def test_the_dlq_is_encrypted_kept_14_days_and_alarmed_on(transformed: dict[str, Any]) -> None:
    queue = transformed["Resources"]["AsyncFailures"]["Properties"]
    assert queue["SqsManagedSseEnabled"] is True and queue["MessageRetentionPeriod"] == 14 * 86400
    assert [{"Name": "QueueName", "Value": {"Fn::GetAtt": ["AsyncFailures", "QueueName"]}}] in \
        watched(transformed)[("AWS/SQS", "ApproximateNumberOfMessagesVisible")]


# Catch paths that record the error in the output and go on, by design (each has a test in
# tests/aws/test_statemachines.py): one agent's clustering, and the sweep and the session
# judging before clustering, the hourly looks after it.
CATCH_AND_GO_ON = {("cluster", "ClusterAgent"), ("cluster", "SweepEvals"),
                   ("cluster", "WatchActiveAgents"), ("cluster", "JudgeSessions")}


@pytest.mark.parametrize("machine", ["cluster", "benchmark"])
def test_every_task_state_catches_and_ends_in_a_recorded_failure(machine: str) -> None:
    states = states_of(definition(machine))
    for name, state in states.items():
        if state["Type"] != "Task":
            continue
        (catch,) = state["Catch"]
        assert catch["ErrorEquals"] == ["States.ALL"] and catch["ResultPath"], name
        if (machine, name) in CATCH_AND_GO_ON:
            continue
        target = states[catch["Next"]]
        if target["Type"] == "Task":  # a step recording the failure, then the Fail state
            target = states[target["Next"]]
        if target["Type"] == "Choice":  # ... or a choice that goes there on the recorded error
            (failing,) = [c for c in target["Choices"] if c["Variable"] == catch["ResultPath"]]
            target = states[failing["Next"]]
        assert target["Type"] == "Fail" and target["Error"] and target["Cause"], name


def test_the_hourly_run_looks_then_fails_when_it_cannot_find_the_agents_due(sfn: Sfn) -> None:
    """Nothing is clustered, the looks still run (what they read is kept by ingest), and the
    execution fails after them, so that an alarm on failed executions notices."""
    attempts = definition("cluster")["States"]["FindDueAgents"]["Retry"][0]["MaxAttempts"] + 1
    sfn.queue({}, {}, *[error("RuntimeError")] * attempts, {"watched": 3})
    run = sfn.run(sfn.cluster_arn, "cluster-due-broken", {})
    assert run["status"] == "FAILED" and run["error"] == "ClusterDueAgentsFailed"
    assert [i["step"] for i in invocations(run)] == ["sweep_evals", "judge_sessions"] + [
        "due_agents"] * attempts + ["watch_active"]
    assert invocations(run)[-1]["state"]["due_error"]["Error"] == "RuntimeError"


def test_a_benchmark_run_that_cannot_be_marked_failed_still_ends_in_a_failure(sfn: Sfn) -> None:
    attempts = definition("benchmark")["States"]["Fail"]["Retry"][0]["MaxAttempts"] + 1
    sfn.queue(error("ValueError"), *[error("RuntimeError")] * attempts)
    run = sfn.run(sfn.benchmark_arn, "benchmark-unmarked", {"run_id": "r1", "next": "grade"})
    assert run["status"] == "FAILED" and run["error"] == "BenchmarkGradingFailedUnmarked"
    assert [i["step"] for i in invocations(run)] == ["grade"] + ["fail"] * attempts
