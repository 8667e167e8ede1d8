"""A first deploy is one documented command with no questions, then a smoke check that works.

`sam deploy` without `--guided` takes every answer from `samconfig.toml` and the template's
defaults; it only prints "<Function> has no authentication." where `--guided` asks (and Enter
aborts). The README's smoke check runs here as written, against a real local server.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.aws import cfn
from tests.conftest import serving

SH_FENCE = re.compile(r"^```sh\n(.*?)^```", re.S | re.M)
IAM_NAME_PROPERTIES = {"AWS::IAM::Role": "RoleName", "AWS::IAM::ManagedPolicy": "ManagedPolicyName",
                       "AWS::IAM::User": "UserName", "AWS::IAM::Group": "GroupName",
                       "AWS::IAM::InstanceProfile": "InstanceProfileName"}


def deploy_settings() -> dict[str, Any]:
    """What `sam deploy` reads from samconfig.toml: the global section, then deploy's."""
    config = tomllib.loads((cfn.REPO / "samconfig.toml").read_text())["default"]
    return {**config["global"]["parameters"], **config["deploy"]["parameters"]}


def samconfig_overrides() -> set[str]:
    overrides = deploy_settings().get("parameter_overrides", "")
    return {pair.split("=", 1)[0] for pair in shlex.split(overrides)}


def deploy_section() -> str:
    readme = (cfn.REPO / "README.md").read_text()
    return readme.split("## Deploy to AWS", 1)[1].split("\n## ", 1)[0]


def smoke_block() -> str:
    (block,) = [b for b in SH_FENCE.findall(deploy_section()) if "/healthz" in b]
    return block


def test_every_template_parameter_has_a_default_or_a_samconfig_value() -> None:
    parameters = cfn.load_template()["Parameters"]
    missing = [name for name, p in parameters.items()
               if "Default" not in p and name not in samconfig_overrides()]
    assert missing == []
    assert samconfig_overrides() <= set(parameters), "samconfig names a parameter not in the template"


def test_samconfig_answers_everything_a_deploy_without_guided_needs() -> None:
    settings = deploy_settings()
    assert settings["stack_name"] == "bench"
    assert settings["resolve_s3"] is True, "SAM's managed bucket holds the packaged code"
    # The transformed template creates roles (CAPABILITY_IAM); a named one would need NAMED_IAM.
    capabilities = set(settings["capabilities"].split())
    named = [logical_id for logical_id, r in cfn.load_template()["Resources"].items()
             if IAM_NAME_PROPERTIES.get(r["Type"]) in r.get("Properties", {})]
    assert capabilities == ({"CAPABILITY_NAMED_IAM"} if named else {"CAPABILITY_IAM"}
                            ) | {"CAPABILITY_AUTO_EXPAND"}
    # No question at all: the change set applies, and the README says how to review one.
    assert settings["confirm_changeset"] is False
    assert "--confirm-changeset" in deploy_section()
    assert "region" not in settings, "the region comes from --region or the AWS configuration"


def test_the_readme_deploys_with_one_command_never_guided() -> None:
    commands = [line.split("#")[0].strip() for block in SH_FENCE.findall(deploy_section())
                for line in block.splitlines()]
    deploys = [c for c in commands if c.startswith("sam deploy")]
    assert deploys and all("--guided" not in c for c in deploys)
    assert any(re.fullmatch(r"sam deploy --region [a-z0-9-]+", c) for c in deploys)
    assert "Security Constraints Not Satisfied!" in deploy_section(), "why not --guided"


def test_every_route_the_smoke_check_calls_is_deployed(transformed: dict[str, Any]) -> None:
    routes = cfn.http_routes(transformed)
    calls = re.findall(r'"\$BENCH_ENDPOINT(/[^"]*)"', smoke_block())
    assert len(calls) == 3
    methods = ["GET", "POST", "GET"]
    for method, path in zip(methods, calls, strict=True):
        assert cfn.route_for(routes, method, path) is not None, (method, path)


def test_the_readme_smoke_check_passes_against_a_real_server(tmp_path: Path) -> None:
    if shutil.which("curl") is None:
        if os.environ.get("CI"):
            pytest.fail("curl is not installed, and CI runs the README's smoke check with it")
        pytest.skip("curl is not installed: the README's smoke check runs it")
    with serving(tmp_path) as server:
        key = server.create_key("you")
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", smoke_block()], capture_output=True, text=True,
            timeout=60, env={**os.environ, "BENCH_ENDPOINT": server.url, "BENCH_KEY": key})
    assert done.returncode == 0, done.stderr
    health, ingested, read_back = json_documents(done.stdout)
    assert health["status"] == "ok"
    assert (ingested["accepted"], ingested["agent"]) == (1, "you/smoke")
    assert [event["id"] for event in read_back["events"]] == ["smoke-1"]


def json_documents(text: str) -> list[Any]:
    """The JSON answers curl printed one after another, without separators."""
    decoder, found, at = json.JSONDecoder(), [], 0
    text = text.strip()
    while at < len(text):
        document, at = decoder.raw_decode(text, at)
        found.append(document)
        at = len(text) - len(text[at:].lstrip())
    return found


@pytest.mark.parametrize("output", ["ApiUrl", "TableName"])
def test_the_outputs_the_readme_reads_exist(output: str) -> None:
    assert output in cfn.load_template()["Outputs"]
    assert f"out {output}" in deploy_section()
