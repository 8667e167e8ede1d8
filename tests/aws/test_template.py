"""The deployment, checked offline: lint, transform, routes, code, table, permissions.

`sam build && sam deploy` cannot run here; these checks catch what would break it (or break the
deployed app) without an AWS account.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from bench_core.store.dynamodb.table import TABLE_PROPERTIES

from tests.aws import cfn
from tests.aws.lambda_runtime import load_function_module

# Properties CloudFormation knows but the store's definition need not (names, tags, and the
# encryption key, a deployment choice).
CFN_ONLY_TABLE_PROPERTIES = {"TableName", "Tags", "SSESpecification"}
HEAVY_MODULES = ("numpy", "sklearn", "scipy", "pandas")
MAX_HANDLER_LINES = 25

# Built in this tree, not deployed by template.yaml yet: each names what will deploy it. The
# tests fail once an entry is deployed, so these lists only shrink; anything new that one
# machine serves must be deployed or listed here.
FUNCTIONS_NOT_DEPLOYED_YET: dict[str, str] = {}
ROUTES_NOT_DEPLOYED_YET: dict[str, str] = {}  # local route path -> what will serve it on AWS


# ---- the template as a whole --------------------------------------------------------------------


# Where people are likely to deploy (all 46 regions take a minute; these catch a resource type
# or property missing in a region just the same).
LINT_REGIONS = ["us-east-1", "us-east-2", "us-west-2", "eu-west-1", "eu-central-1",
                "ap-northeast-1", "ap-southeast-2"]


def test_cfn_lint_finds_no_error_or_warning() -> None:
    from cfnlint.api import ManualArgs, lint_file

    matches = lint_file(cfn.TEMPLATE, ManualArgs(regions=LINT_REGIONS))
    assert [f"{m.rule.id} line {m.linenumber}: {m.message}" for m in matches] == []


def test_template_uses_no_yaml_aliases() -> None:
    """CloudFormation rejects YAML anchors and aliases; only some tools expand them first."""
    events = yaml.parse(cfn.TEMPLATE.read_text(), Loader=yaml.SafeLoader)
    assert not [e for e in events if isinstance(e, yaml.AliasEvent)]


def test_sam_translator_turns_the_template_into_cloudformation(
        transformed: dict[str, Any]) -> None:
    kinds = {r["Type"] for r in transformed["Resources"].values()}
    assert not [k for k in kinds if k.startswith("AWS::Serverless::")]
    assert {"AWS::Lambda::Function", "AWS::Lambda::LayerVersion", "AWS::DynamoDB::Table",
            "AWS::ApiGatewayV2::Api", "AWS::ApiGatewayV2::Stage"} <= kinds


def test_parameters_and_outputs_for_what_differs_per_install() -> None:
    template = cfn.load_template()
    assert {"Stage", "DomainName", "GitHubClientId", "SessionSecretParameter",
            "GitHubClientSecretParameter"} <= set(template["Parameters"])
    assert {"ApiUrl", "WebSocketUrl", "TableName"} <= set(template["Outputs"])


def test_every_function_runs_python312_on_arm64_with_the_core_layer(
        transformed: dict[str, Any]) -> None:
    layers = cfn.resources_of_type(transformed, "AWS::Lambda::LayerVersion")
    assert len(layers) == 1
    (layer_id, layer), = layers.items()
    assert layer["Properties"]["CompatibleRuntimes"] == ["python3.12"]
    assert layer["Properties"]["CompatibleArchitectures"] == ["arm64"]
    assert layer["Properties"]["Content"]["S3Key"] == "layers/core/"
    sam_layer = cfn.load_template()["Resources"]["CoreLayer"]
    assert sam_layer["Metadata"]["BuildMethod"] == "makefile"  # layers/core/Makefile
    for logical_id, fn in cfn.resources_of_type(transformed, "AWS::Lambda::Function").items():
        props = fn["Properties"]
        assert (props["Runtime"], props["Architectures"]) == ("python3.12", ["arm64"]), logical_id
        assert {"Ref": layer_id} in props["Layers"], logical_id
        assert props["TracingConfig"] == {"Mode": "Active"}, logical_id
        assert props["LoggingConfig"]["LogFormat"] == "JSON", logical_id
        assert props["Environment"]["Variables"]["BENCH_STORE"] == "dynamodb", logical_id


def test_samconfig_builds_the_layer_in_the_source_tree() -> None:
    """What deploys is tests/aws/test_first_deploy.py's; this is `sam build`'s setting."""
    config = tomllib.loads((cfn.REPO / "samconfig.toml").read_text())
    # layers/core/Makefile reads benchmarks/ beside it: it must run in the source tree.
    assert config["default"]["build"]["parameters"]["build_in_source"] is True


# ---- the table ------------------------------------------------------------------------------------


def test_table_in_the_template_is_the_store_definition() -> None:
    declared = {k: v for k, v in cfn.table_properties().items()
                if k not in CFN_ONLY_TABLE_PROPERTIES}
    assert declared == TABLE_PROPERTIES


def test_table_uses_the_free_default_encryption_unless_a_key_is_given() -> None:
    """`SSEEnabled: true` alone means the KMS-managed key, billed per request; the default
    (no SSESpecification) is the AWS-owned key, free. A customer key is opt-in."""
    template = cfn.load_template()
    sse = template["Resources"][cfn.TABLE_RESOURCE]["Properties"]["SSESpecification"]
    condition, with_key, without_key = sse["Fn::If"]
    assert without_key == {"Ref": "AWS::NoValue"}
    assert with_key == {"SSEEnabled": True, "SSEType": "KMS",
                        "KMSMasterKeyId": {"Ref": "TableKmsKeyArn"}}
    assert template["Parameters"]["TableKmsKeyArn"]["Default"] == ""
    assert template["Conditions"][condition] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "TableKmsKeyArn"}, ""]}]}


def test_table_outlives_the_stack() -> None:
    table = cfn.load_template()["Resources"][cfn.TABLE_RESOURCE]
    assert (table["DeletionPolicy"], table["UpdateReplacePolicy"]) == ("Retain", "Retain")


# ---- functions and routes -------------------------------------------------------------------------


@cache
def import_report(code_dir: Path, handler: str) -> dict[str, Any]:
    """Import a handler as Lambda would (its folder and the layer on the path, nothing else of
    the repository) in a fresh interpreter, configured for DynamoDB."""
    module, _, attribute = handler.rpartition(".")
    script = (
        "import importlib, json, sys\n"
        "try:\n"
        f"    handler = getattr(importlib.import_module({module!r}), {attribute!r})\n"
        "    error = None if callable(handler) else 'handler is not callable'\n"
        "except Exception as exc:\n"
        "    error = f'{type(exc).__name__}: {exc}'\n"
        f"heavy = sorted(m for m in {HEAVY_MODULES!r} if m in sys.modules)\n"
        "print(json.dumps({'error': error, 'heavy': heavy, 'modules': sorted(sys.modules)}))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BENCH_", "AWS_LAMBDA"))}
    env.update(PYTHONPATH=os.pathsep.join([str(code_dir), str(cfn.REPO / "layers" / "core")]),
               BENCH_STORE="dynamodb", BENCH_TABLE_NAME="bench-import-check")
    done = subprocess.run([sys.executable, "-c", script], cwd=code_dir, env=env,
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        return {"error": done.stderr[-2000:], "heavy": [], "modules": []}
    return json.loads(done.stdout.strip().splitlines()[-1])


def function_dirs() -> list[Path]:
    return sorted(p for p in cfn.FUNCTIONS_DIR.iterdir() if (p / "app.py").exists())


def test_every_function_folder_has_exactly_one_function_resource(
        transformed: dict[str, Any]) -> None:
    deployed = sorted(f.code_dir for f in cfn.functions(transformed).values())
    assert len(deployed) == len(set(deployed))
    assert all(d.exists() for d in deployed), deployed
    expected = [d for d in function_dirs() if d.name not in FUNCTIONS_NOT_DEPLOYED_YET]
    assert deployed == expected
    assert not [d for d in deployed if d.name in FUNCTIONS_NOT_DEPLOYED_YET], \
        "deployed now: drop it from FUNCTIONS_NOT_DEPLOYED_YET"


@pytest.mark.parametrize("code_dir", function_dirs(), ids=lambda p: p.name)
def test_function_handler_imports_with_dynamodb_settings_and_no_heavy_libraries(
        transformed: dict[str, Any], code_dir: Path) -> None:
    """Also for functions not deployed yet: their handler must import as Lambda would."""
    deployed = [f for f in cfn.functions(transformed).values() if f.code_dir == code_dir]
    handler = deployed[0].handler if deployed else "app.handler"
    module = handler.rpartition(".")[0]
    assert (code_dir / (module.replace(".", "/") + ".py")).exists(), handler
    report = import_report(code_dir, handler)
    assert report["error"] is None, report
    assert report["heavy"] == [], "heavy libraries are imported when used, not at import"


def test_the_api_function_loads_neither_templates_nor_graders_at_import() -> None:
    """It serves JSON: Jinja2 comes with the first page rendered, the graders (and the LLM port)
    with the first benchmark run submitted, not with every cold start."""
    report = import_report(cfn.FUNCTIONS_DIR / "api", "app.handler")
    assert report["error"] is None, report
    loaded = set(report["modules"])
    assert "bench_core.benchmarks.runs" not in loaded
    assert not {m for m in loaded if m.split(".")[0] == "jinja2"}


@pytest.mark.parametrize("code_dir", function_dirs(), ids=lambda p: p.name)
def test_function_entry_point_is_thin(code_dir: Path) -> None:
    code = [line for line in (code_dir / "app.py").read_text().splitlines()
            if line.strip() and not line.strip().startswith("#")]
    docstring_lines = _docstring_lines(code_dir / "app.py")
    assert len(code) - docstring_lines <= MAX_HANDLER_LINES


def _docstring_lines(path: Path) -> int:
    import ast

    tree = ast.parse(path.read_text())
    doc = ast.get_docstring(tree, clean=False)
    return len([line for line in doc.splitlines() if line.strip()]) if doc else 0


def test_every_http_route_reaches_a_function_whose_handler_imports(
        transformed: dict[str, Any]) -> None:
    functions = cfn.functions(transformed)
    routes = cfn.http_routes(transformed)
    assert {(r.method, r.path) for r in routes} >= {("POST", "/ingest"),
                                                     ("ANY", "/api/{proxy+}"),
                                                     ("GET", "/healthz")}
    for route in routes:
        assert route.function in functions, route
        function = functions[route.function]
        assert import_report(function.code_dir, function.handler)["error"] is None, route


def test_every_route_the_local_server_serves_is_routed_to_a_function_serving_it(
        transformed: dict[str, Any]) -> None:
    """The AWS deployment serves the same surface as one machine: each route mounted locally is
    reachable through the HTTP API, at a function whose own app serves it (as Starlette would
    match the request), unless it is listed as not deployed yet."""
    from bench_core.local import ROUTERS
    from starlette.routing import Route

    functions = cfn.functions(transformed)
    routes = cfn.http_routes(transformed)
    missing, deployed_now = [], set()
    for router in ROUTERS:
        for local in router.routes:
            if not isinstance(local, Route):  # FastAPI's routes and plain ASGI ones (/mcp)
                continue
            for method in sorted(local.methods or ("GET", "POST")):  # none: every method
                sample = _sample_path(local.path)
                route = cfn.route_for(routes, method, sample)
                served = route is not None and _serves(
                    load_function_module(functions[route.function].code_dir), method, sample)
                if local.path in ROUTES_NOT_DEPLOYED_YET:
                    if served:
                        deployed_now.add(local.path)
                elif not served:
                    where = route.function if route else "no function"
                    missing.append(f"{method} {local.path} -> {where}")
    assert missing == [], "served locally, not on AWS"
    assert deployed_now == set(), "deployed now: drop from ROUTES_NOT_DEPLOYED_YET"


def _serves(module: Any, method: str, path: str) -> bool:
    """Whether a function module's ASGI `app` matches the request, or, for a handler without
    one (the badge's), one of the (method, path template) pairs it lists in `ROUTES`."""
    from starlette.routing import Match, compile_path

    if not hasattr(module, "app"):
        return any(m == method and compile_path(p)[0].match(path) for m, p in module.ROUTES)
    app = module.app
    scope = {"type": "http", "method": method, "path": path, "root_path": "",
             "query_string": b"", "headers": []}
    return any(route.matches(scope)[0] == Match.FULL for route in app.router.routes)


def _sample_path(path: str) -> str:
    """A concrete path for a route template: every `{param}` becomes a plain segment."""
    import re

    return re.sub(r"\{[^}]+\}", "x", path)


# ---- the WebSocket API --------------------------------------------------------------------------


def test_websocket_api_routes_connect_disconnect_and_default_to_the_live_function(
        transformed: dict[str, Any]) -> None:
    resources = transformed["Resources"]
    routes = {r["Properties"]["RouteKey"]: (logical_id, r["Properties"])
              for logical_id, r in cfn.resources_of_type(transformed,
                                                         "AWS::ApiGatewayV2::Route").items()
              if r["Properties"]["ApiId"] == {"Ref": "LiveApi"}}
    assert set(routes) == {"$connect", "$disconnect", "$default"}
    functions = cfn.functions(transformed)
    for _, props in routes.values():
        integration = resources[props["Target"]["Fn::Join"][1][1]["Ref"]]["Properties"]
        function_arn = integration["IntegrationUri"]["Fn::Sub"][1]["FunctionArn"]
        function = functions[function_arn["Fn::GetAtt"][0]]
        assert function.code_dir.name == "live"
        assert import_report(function.code_dir, function.handler)["error"] is None
    default_route_id = routes["$default"][0]
    assert default_route_id in cfn.load_template()["Resources"], \
        "the route its response names is declared in template.yaml, not generated by SAM"
    responses = [r["Properties"] for r in
                 cfn.resources_of_type(transformed, "AWS::ApiGatewayV2::RouteResponse").values()]
    assert {"ApiId": {"Ref": "LiveApi"}, "RouteId": {"Ref": default_route_id},
            "RouteResponseKey": "$default"} in responses, "$default must answer the client"
    stages = [s for s in cfn.resources_of_type(transformed, "AWS::ApiGatewayV2::Stage").values()
              if s["Properties"]["ApiId"] == {"Ref": "LiveApi"}]
    assert len(stages) == 1


# ---- permissions -------------------------------------------------------------------------------

TABLE_ARN = {"Fn::GetAtt": [cfn.TABLE_RESOURCE, "Arn"]}
INDEX_ARN = {"Fn::Sub": "${" + cfn.TABLE_RESOURCE + ".Arn}/index/*"}


def test_roles_grant_no_wildcard_where_a_narrower_grant_exists(
        transformed: dict[str, Any]) -> None:
    for function in cfn.functions(transformed).values():
        statements = cfn.role_statements(transformed, function.role)
        assert statements, function
        for statement in statements:
            where = f"{function.logical_id}: {statement}"
            actions, resources = cfn.as_list(statement["Action"]), cfn.as_list(statement["Resource"])
            assert statement["Effect"] == "Allow", where
            assert not [a for a in actions if "*" in a], where
            if "*" in resources:  # X-Ray has no resource-level permissions
                assert all(a.startswith("xray:") for a in actions), where
            if any(a.startswith("dynamodb:") for a in actions):
                assert all(r in (TABLE_ARN, INDEX_ARN) for r in resources), where
                if INDEX_ARN in resources:  # only Query and Scan read an index
                    assert set(actions) <= {"dynamodb:Query"}, where
            if any(a.startswith("logs:") for a in actions):
                assert resources == [{"Fn::GetAtt": ["FunctionLogs", "Arn"]}], where


def test_each_function_has_its_own_role(transformed: dict[str, Any]) -> None:
    roles = [f.role for f in cfn.functions(transformed).values()]
    assert len(roles) == len(set(roles))


# ---- smaller promises the template makes ---------------------------------------------------------


def test_the_api_url_output_names_the_variable_the_sdk_reads() -> None:
    description = cfn.load_template()["Outputs"]["ApiUrl"]["Description"]
    assert "BENCH_ENDPOINT" in description and "BENCH_URL" not in description
    assert 'os.environ.get("BENCH_ENDPOINT")' in (cfn.REPO / "sdk/bench/_config.py").read_text()


def test_invoke_reserves_concurrency_only_when_asked() -> None:
    template = cfn.load_template()
    invoke = template["Resources"]["InvokeFunction"]["Properties"]
    assert invoke["ReservedConcurrentExecutions"] == {"Fn::If": [
        "HasInvokeConcurrency", {"Ref": "InvokeReservedConcurrency"}, {"Ref": "AWS::NoValue"}]}
    assert template["Parameters"]["InvokeReservedConcurrency"]["Default"] == 0


def test_evals_come_from_a_queue_at_a_bounded_concurrency_with_a_dead_letter_queue(
        transformed: dict[str, Any]) -> None:
    from bench_core.evals import queue

    resources = transformed["Resources"]
    (mapping,) = [r["Properties"] for r in resources.values()
                  if r["Type"] == "AWS::Lambda::EventSourceMapping"
                  and r["Properties"]["FunctionName"] == {"Ref": "EvalFunction"}]
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": ["EvalQueue", "Arn"]}
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["ScalingConfig"] == {"MaximumConcurrency": {"Ref": "EvalConcurrency"}}
    evals = resources["EvalQueue"]["Properties"]
    assert evals["RedrivePolicy"]["deadLetterTargetArn"] == {"Fn::GetAtt": ["EvalDeadLetters", "Arn"]}
    # a message lives through the two days of retries and its last wait
    retention = evals["MessageRetentionPeriod"]
    assert retention >= (queue.GIVE_UP_AFTER + queue.LAST_RETRY).total_seconds()
    # the retries before the give-up take fewer deliveries than the dead-letter move
    waited, deliveries = 0.0, 0
    while waited < queue.GIVE_UP_AFTER.total_seconds():
        deliveries += 1
        waited += queue.retry_delay(deliveries).total_seconds()
    assert deliveries + 1 < evals["RedrivePolicy"]["maxReceiveCount"]
    assert all(resources[q]["Properties"]["SqsManagedSseEnabled"] for q in ("EvalQueue", "EvalDeadLetters"))


def test_the_readme_names_the_sam_cli_version_the_template_needs() -> None:
    """AWS::Serverless::WebSocketApi arrived in SAM CLI 1.158.0."""
    assert "AWS::Serverless::WebSocketApi" in cfn.TEMPLATE.read_text()
    assert "SAM CLI 1.158.0" in (cfn.REPO / "README.md").read_text()
