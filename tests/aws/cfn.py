"""`template.yaml` as data: parsed as cfn-lint parses it, transformed offline as CloudFormation
transforms it (aws-sam-translator), and read back as functions, routes and roles.

Tests and the moto table read the deployment from here, so they check what would be deployed.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
TEMPLATE = REPO / "template.yaml"
FUNCTIONS_DIR = REPO / "functions"
TABLE_RESOURCE = "BenchTable"
ARTIFACT_BUCKET = "bench-artifacts"


@cache
def _template_json() -> str:
    from cfnlint.decode import decode_str

    template, problems = decode_str(TEMPLATE.read_text())
    if problems:
        raise ValueError(f"{TEMPLATE} does not parse: {problems}")
    return json.dumps(template)


def load_template() -> dict[str, Any]:
    """The template with intrinsic tags as their JSON form (`!Ref X` → `{"Ref": "X"}`); a fresh
    copy on every call, since the transform changes what it is given."""
    return json.loads(_template_json())


def table_properties() -> dict[str, Any]:
    """The table resource's `Properties`, exactly as the template declares them."""
    return load_template()["Resources"][TABLE_RESOURCE]["Properties"]


def packaged(template: dict[str, Any]) -> dict[str, Any]:
    """What `sam package` would hand CloudFormation: local code paths become S3 locations
    (the translator accepts nothing else). The S3 key keeps the local path, to find it again."""
    result = copy.deepcopy(template)
    for resource in result["Resources"].values():
        props = resource.get("Properties", {})
        for name in ("CodeUri", "ContentUri", "DefinitionUri"):
            if isinstance(props.get(name), str) and not props[name].startswith("s3://"):
                props[name] = f"s3://{ARTIFACT_BUCKET}/{props[name]}"
    return result


class _NoManagedPolicies:
    """The translator's managed-policy loader, offline: the template names no AWS managed
    policy by name, so there is nothing to look up (a name would fail the transform)."""

    def load(self) -> dict[str, str]:
        return {}


def transform(parameters: dict[str, Any] | None = None) -> dict[str, Any]:
    """The CloudFormation template `template.yaml` becomes (needs AWS_DEFAULT_REGION set)."""
    from samtranslator.translator.transform import transform as sam_transform

    return sam_transform(packaged(load_template()), parameters or {}, _NoManagedPolicies())


# ---- reading the transformed template ---------------------------------------------------------


@dataclass(frozen=True)
class Function:
    logical_id: str
    code_dir: Path
    handler: str
    role: str

    @property
    def handler_file(self) -> Path:
        module, _, _ = self.handler.rpartition(".")
        return self.code_dir / (module.replace(".", "/") + ".py")


@dataclass(frozen=True)
class HttpRoute:
    method: str  # upper case; ANY for any method
    path: str  # as API Gateway writes it, e.g. /api/{proxy+}
    function: str  # logical id

    def matches(self, method: str, path: str) -> bool:
        """Whether API Gateway would send `method path` to this route (ignoring precedence). A
        trailing slash is not part of the match (`/simple/` takes the `/simple` route); the
        function still sees the path as sent."""
        pattern = re.sub(r"\{[^/{}]+\+\}", ".+", self.path)
        pattern = re.sub(r"\{[^/{}]+\}", "[^/]+", pattern)
        if len(path) > 1:
            path = path.removesuffix("/")
        return self.method in ("ANY", method.upper()) and re.fullmatch(pattern, path) is not None

    @property
    def specificity(self) -> tuple[int, int, int]:
        """API Gateway prefers exact paths, then fewer greedy and plain variables, then a
        named method over ANY."""
        return (-self.path.count("+}"), -self.path.count("{"), int(self.method != "ANY"))


def resources_of_type(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


def functions(cfn: dict[str, Any]) -> dict[str, Function]:
    """Every Lambda function of the transformed template, with where its code comes from."""
    result = {}
    for logical_id, resource in resources_of_type(cfn, "AWS::Lambda::Function").items():
        props = resource["Properties"]
        key = props["Code"]["S3Key"]
        role = props["Role"]["Fn::GetAtt"][0]
        result[logical_id] = Function(logical_id, (REPO / key).resolve(), props["Handler"], role)
    return result


def _function_in_uri(uri: Any, resources: dict[str, Any]) -> str:
    """`IngestFunction` from an integration URI `Fn::Sub: ...${IngestFunction.Arn}/...`, or
    from one naming an alias (`${McpFunctionAliaslive}`, with AutoPublishAlias) of it."""
    text = uri["Fn::Sub"] if isinstance(uri, dict) else uri
    found = re.search(r"\$\{(\w+)(\.Arn)?\}", text)
    if not found or (found.group(2) is None and
                     resources.get(found.group(1), {}).get("Type") != "AWS::Lambda::Alias"):
        raise ValueError(f"integration URI names no function: {uri}")
    if found.group(2) is None:
        return resources[found.group(1)]["Properties"]["FunctionName"]["Ref"]
    return found.group(1)


def http_routes(cfn: dict[str, Any]) -> list[HttpRoute]:
    """Every route of every HTTP API, read from the OpenAPI bodies the transform wrote."""
    routes = []
    for api in resources_of_type(cfn, "AWS::ApiGatewayV2::Api").values():
        body = api["Properties"].get("Body")
        if body is None:  # a WebSocket API
            continue
        for path, operations in body["paths"].items():
            for operation, spec in operations.items():
                method = "ANY" if operation == "x-amazon-apigateway-any-method" else operation
                uri = spec["x-amazon-apigateway-integration"]["uri"]
                routes.append(HttpRoute(method.upper(), path, _function_in_uri(uri, cfn["Resources"])))
    return routes


def route_for(routes: list[HttpRoute], method: str, path: str) -> HttpRoute | None:
    candidates = [r for r in routes if r.matches(method, path)]
    return max(candidates, key=lambda r: r.specificity, default=None)


def role_statements(cfn: dict[str, Any], role_id: str) -> list[dict[str, Any]]:
    """Every IAM statement a role grants: inline policies and the template's managed policies.
    AWS managed policies (by ARN) cannot be inspected offline, so they fail the lookup."""
    role = cfn["Resources"][role_id]["Properties"]
    statements = [s for p in role.get("Policies", []) for s in p["PolicyDocument"]["Statement"]]
    for arn in role.get("ManagedPolicyArns", []):
        if not (isinstance(arn, dict) and "Ref" in arn):
            raise ValueError(f"{role_id} attaches {arn}, which this check cannot read")
        policy = cfn["Resources"][arn["Ref"]]["Properties"]["PolicyDocument"]
        statements.extend(policy["Statement"])
    return statements


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def environment(cfn: dict[str, Any], function_id: str, refs: dict[str, str],
                conditions: dict[str, bool] | None = None) -> dict[str, str]:
    """The environment variables the template gives a function, with `Ref`s to resources taken
    from `refs` (what the test created in their place) and parameters at their defaults."""
    props = cfn["Resources"][function_id]["Properties"]
    variables = props.get("Environment", {}).get("Variables", {})
    return {name: _resolve(value, cfn, refs, conditions or {}) for name, value in variables.items()}


def resolve(value: Any, cfn: dict[str, Any], refs: dict[str, str],
            conditions: dict[str, bool] | None = None) -> str:
    """One value of the template as CloudFormation would compute it (`refs` as in
    `environment`; parameters not in `refs` at their defaults)."""
    return _resolve(value, cfn, refs, conditions or {})


def _resolve(value: Any, cfn: dict[str, Any], refs: dict[str, str],
             conditions: dict[str, bool]) -> str:
    if isinstance(value, (str, int, float)):
        return str(value)
    (function, argument), = value.items()
    if function == "Ref":
        return _ref(argument, cfn, refs)
    if function == "Fn::If":
        condition, if_true, if_false = argument
        return _resolve(if_true if conditions.get(condition, False) else if_false, cfn, refs,
                        conditions)
    if function == "Fn::Sub":
        text, local = (argument, {}) if isinstance(argument, str) else argument
        return re.sub(r"\$\{([^}]+)\}", lambda m: _resolve(local[m.group(1)], cfn, refs,
                                                            conditions)
                      if m.group(1) in local else _ref(m.group(1), cfn, refs), text)
    raise ValueError(f"cannot resolve {value} offline")


def _ref(name: str, cfn: dict[str, Any], refs: dict[str, str]) -> str:
    if name in refs:
        return refs[name]
    parameter = cfn.get("Parameters", {}).get(name)
    if parameter is not None and "Default" in parameter:
        return str(parameter["Default"])
    raise KeyError(f"nothing stands in for {name!r}: add it to the test's refs")
