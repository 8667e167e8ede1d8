"""Bedrock in any geography: the judge model and its inference profile are parameters, the IAM
grant follows them, and a region the chosen profile cannot serve fails at deploy time (the
template's Rules) rather than on every judge call."""

from __future__ import annotations

from typing import Any

import pytest

from tests.aws import cfn

NO_VALUE = "<no value>"


def evaluate(expression: Any, values: dict[str, str]) -> Any:
    """A rule's condition or assertion, as CloudFormation evaluates it before creating anything
    (the intrinsic functions Rules allow)."""
    if isinstance(expression, (str, int, float, bool)):
        return expression
    if isinstance(expression, list):
        return [evaluate(e, values) for e in expression]
    (function, argument), = expression.items()
    if function == "Ref":
        return values[argument]
    args = [evaluate(a, values) for a in argument]
    if function == "Fn::Equals":
        return args[0] == args[1]
    if function == "Fn::Contains":
        return args[1] in args[0]
    if function == "Fn::Not":
        return not args[0]
    if function == "Fn::And":
        return all(args)
    if function == "Fn::Or":
        return any(args)
    raise ValueError(f"no evaluator for {function}")


def refused(region: str, **parameters: str) -> list[str]:
    """The AssertDescriptions of the rules a deployment with these parameters breaks."""
    template = cfn.load_template()
    values = {name: str(p.get("Default", "")) for name, p in template["Parameters"].items()}
    values.update(parameters, **{"AWS::Region": region})
    broken = []
    for rule in template["Rules"].values():
        if "RuleCondition" in rule and not evaluate(rule["RuleCondition"], values):
            continue
        broken += [a["AssertDescription"] for a in rule["Assertions"]
                   if not evaluate(a["Assert"], values)]
    return broken


NOVA = "amazon.nova-pro-v1:0"


@pytest.mark.parametrize("region", ["us-east-1", "us-east-2", "us-west-2"])
def test_the_default_deploys_in_the_us(region: str) -> None:
    assert refused(region) == []


@pytest.mark.parametrize("region, geography", [("eu-west-1", "eu"), ("eu-central-1", "eu"),
                                               ("ap-northeast-1", "apac"),
                                               ("ap-southeast-2", "apac"),
                                               ("sa-east-1", "none"), ("eu-west-1", "none")])
def test_a_geography_deploys_in_its_own_regions(region: str, geography: str) -> None:
    assert refused(region, BedrockGeography=geography, JudgeModel=NOVA) == []


@pytest.mark.parametrize("region, geography", [("eu-west-1", "us"), ("ap-northeast-1", "us"),
                                               ("sa-east-1", "us"), ("us-east-1", "eu"),
                                               ("eu-west-1", "apac"), ("ca-central-1", "eu")])
def test_a_region_the_profile_cannot_serve_fails_the_deployment_saying_what_to_set(
        region: str, geography: str) -> None:
    (message,) = refused(region, BedrockGeography=geography, JudgeModel=NOVA)
    assert f"BedrockGeography={geography}" in message
    if geography == "us":
        assert "BedrockGeography=eu" in message and "apac" in message


def test_us_west_1_is_refused_since_the_us_profiles_do_not_take_its_requests() -> None:
    """The `us.` profiles of Llama 3.3 70B and Nova serve us-east-1, us-east-2 and us-west-2."""
    (message,) = refused("us-west-1", JudgeModel=NOVA, EmbedModel="cohere.embed-english-v3")
    assert "BedrockGeography=us" in message and "us-west-1" not in message


@pytest.mark.parametrize("region, geography", [("eu-west-1", "eu"), ("ap-northeast-1", "apac"),
                                               ("us-east-1", "none"), ("sa-east-1", "none")])
def test_the_default_judge_outside_its_us_profile_fails_saying_which_model_to_set(
        region: str, geography: str) -> None:
    (message,) = refused(region, BedrockGeography=geography)
    assert "JudgeModel=meta.llama3-3-70b-instruct-v1:0" in message
    assert "JudgeModel=amazon.nova-pro-v1:0" in message


@pytest.mark.parametrize("region", ["af-south-1", "me-central-1", "ca-west-1"])
def test_the_default_embedding_model_where_it_is_not_offered_fails_saying_what_to_set(
        region: str) -> None:
    (message,) = refused(region, BedrockGeography="none", JudgeModel=NOVA)
    assert "EmbedModel=amazon.titan-embed-text-v2:0" in message
    assert refused(region, BedrockGeography="none", JudgeModel=NOVA,
                   EmbedModel="cohere.embed-multilingual-v3") == []


@pytest.mark.parametrize("region, geography", [("us-east-2", "us"), ("eu-central-1", "eu"),
                                               ("ap-south-1", "apac"), ("ca-central-1", "none")])
def test_the_default_embedding_model_deploys_where_the_judge_does(
        region: str, geography: str) -> None:
    judge = {} if geography == "us" else {"JudgeModel": NOVA}
    assert refused(region, BedrockGeography=geography, **judge) == []


def judge_access(region: str, geography: str, model: str) -> tuple[str, list[str]]:
    """The model id the functions call, and the ARNs JudgeModelAccess grants InvokeModel on."""
    template = cfn.load_template()
    refs = {"AWS::Region": region, "AWS::AccountId": "123456789012", "AWS::Partition": "aws",
            "AWS::NoValue": NO_VALUE, "BedrockGeography": geography, "JudgeModel": model,
            "BenchTable": "bench"}
    conditions = {"HasInferenceProfile": geography != "none"}
    called = cfn.resolve(template["Globals"]["Function"]["Environment"]["Variables"][
        "BENCH_BEDROCK_MODEL"], template, refs, conditions)
    (statement,) = template["Resources"]["JudgeModelAccess"]["Properties"]["PolicyDocument"][
        "Statement"]
    assert cfn.as_list(statement["Action"]) == ["bedrock:InvokeModel"]
    arns = [cfn.resolve(r, template, refs, conditions) for r in statement["Resource"]]
    return called, [a for a in arns if a != NO_VALUE]


@pytest.mark.parametrize("region, geography, model", [
    ("us-east-1", "us", "meta.llama3-3-70b-instruct-v1:0"),
    ("eu-central-1", "eu", "amazon.nova-pro-v1:0"),
    ("ap-southeast-2", "apac", "amazon.nova-lite-v1:0"),
    ("eu-west-2", "none", "amazon.nova-micro-v1:0")])
def test_the_grant_follows_the_model_and_profile_the_functions_call(
        region: str, geography: str, model: str) -> None:
    called, arns = judge_access(region, geography, model)
    if geography == "none":
        assert called == model
        assert arns == [f"arn:aws:bedrock:{region}::foundation-model/{model}"]
    else:
        assert called == f"{geography}.{model}"
        # Converse on a profile needs the profile here and the model wherever it routes to.
        assert arns == [f"arn:aws:bedrock:{region}:123456789012:inference-profile/{called}",
                        f"arn:aws:bedrock:*::foundation-model/{model}"]


def test_every_function_that_asks_a_model_has_the_grant_and_the_models_setting(
        transformed: dict[str, Any]) -> None:
    for function_id in ("EvalFunction", "ClusterFunction", "BenchmarkFunction"):
        role = cfn.functions(transformed)[function_id].role
        managed = transformed["Resources"][role]["Properties"]["ManagedPolicyArns"]
        assert {"Ref": "JudgeModelAccess"} in managed, function_id
        variables = transformed["Resources"][function_id]["Properties"]["Environment"]["Variables"]
        assert "BENCH_BEDROCK_MODEL" in variables, function_id
    text = cfn.TEMPLATE.read_text()
    assert "us.meta.llama3" not in text and "us-east-1::" not in text, "no US-only model ARNs"
