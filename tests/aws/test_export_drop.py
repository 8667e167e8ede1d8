"""Exports too big for one Lambda answer (6 MB) on AWS: written to the export bucket a part at a
time (`files/s3.py` on moto's S3) and answered with a link that lasts five minutes; the bucket
private, encrypted and forgetful, and the API function's role allowed only what that takes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import botocore.client
import httpx
import pytest
from bench_core.domain.errors import NotFound
from bench_core.files import s3
from bench_core.files.s3 import S3Drop
from bench_core.lambdas.export import ExportJobs
from bench_core.reads import export, export_jobs

from tests.aws import cfn
from tests.aws.lambda_runtime import LambdaContext
from tests.aws.moto_table import aws_session, dynamo_store
from tests.aws.test_handlers import Deployment, assert_granted
from tests.aws.test_handlers import deployment as _deployment  # noqa: F401 - the fixture
from tests.conftest import RunningServer, serving
from tests.factories import batch
from tests.http.run_diff_data import SECRETS, run_events, seed_two_runs
from tests.http.test_ingest_http import new_login

BUCKET = "bench-exports-test"


@pytest.fixture
def drop() -> Iterator[tuple[S3Drop, Any]]:
    with dynamo_store():  # moto, with dummy credentials that reach no account
        client = aws_session().client("s3", config=s3.CLIENT_CONFIG)
        client.create_bucket(Bucket=BUCKET)
        yield S3Drop(BUCKET, client=client), client


@pytest.fixture
def site(request: pytest.FixtureRequest) -> Deployment:
    """The template's deployment on moto (tests/aws/test_handlers.py's `deployment`)."""
    return request.getfixturevalue("_deployment")


def chunks(total: int, size: int = 1 << 20) -> Iterator[bytes]:
    for n in range(0, total, size):
        yield bytes([65 + n // size % 26]) * min(size, total - n)


def test_a_file_is_uploaded_a_part_at_a_time_and_linked_for_five_minutes(
        drop: tuple[S3Drop, Any]) -> None:
    sink, client = drop
    total = 2 * s3.PART_BYTES + 12345
    link = sink.put("abc/u-agent-runs.csv", chunks(total), "text/csv; charset=utf-8")
    query = parse_qs(urlparse(link).query)
    assert query["X-Amz-Expires"] == ["300"]
    assert query["response-content-disposition"] == ['attachment; filename="u-agent-runs.csv"']
    assert urlparse(link).path.endswith("/exports/abc/u-agent-runs.csv")
    stored = client.get_object(Bucket=BUCKET, Key="exports/abc/u-agent-runs.csv")
    assert stored["ContentType"] == "text/csv; charset=utf-8"
    assert stored["Body"].read() == b"".join(chunks(total))
    head = client.head_object(Bucket=BUCKET, Key="exports/abc/u-agent-runs.csv", PartNumber=1)
    assert head["PartsCount"] == 3


def test_an_export_that_fails_half_way_leaves_no_upload_behind(
        drop: tuple[S3Drop, Any]) -> None:
    sink, client = drop

    def breaking() -> Iterator[bytes]:
        yield b"x" * (s3.PART_BYTES + 1)
        raise RuntimeError("the store went away")

    with pytest.raises(RuntimeError):
        sink.put("abc/broken.jsonl", breaking(), "application/x-ndjson")
    assert client.list_multipart_uploads(Bucket=BUCKET).get("Uploads", []) == []
    assert client.list_objects_v2(Bucket=BUCKET).get("KeyCount") == 0


def test_a_big_export_is_answered_with_a_link_and_a_small_one_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with dynamo_store() as store, serving(tmp_path, over=store, store="dynamodb") as server:
        client = aws_session().client("s3", config=s3.CLIENT_CONFIG)
        client.create_bucket(Bucket=BUCKET)
        server.services.provide(files=S3Drop(BUCKET, client=client))
        runs = seed_two_runs(server)
        path = f"/api/agents/{runs.path}/runs.jsonl"
        whole = httpx.get(server.url + path, params={"spans": 1})
        assert whole.status_code == 200 and whole.headers["content-length"]
        monkeypatch.setattr(export, "ANSWER_BYTES", 2000)  # the server runs in this process
        moved = httpx.get(server.url + path, params={"spans": 1})
        assert moved.status_code == 303, moved.text
        link = moved.headers["location"]
        assert moved.json() == {"url": link, "expires_in_s": 300}
        assert urlparse(link).hostname.startswith(BUCKET + ".")  # type: ignore[union-attr]
        key = urlparse(link).path.lstrip("/")
        assert key.startswith("exports/") and key.endswith(f"/{runs.login}-{runs.slug}-runs.jsonl")
        body = client.get_object(Bucket=BUCKET, Key=key)["Body"].read()
        assert body == whole.content  # the same export, through the gate alike
        assert not any(secret.encode() in body for secret in SECRETS)
        assert json.loads(body.splitlines()[-1])["record"] == "end"


@dataclass
class Jobs:
    """The export function's queue: the jobs handed off, as Lambda would queue them."""

    payloads: list[dict[str, Any]] = field(default_factory=list)

    def hand_off(self, job: dict[str, Any]) -> None:
        self.payloads.append(json.loads(json.dumps(job)))  # what travels is JSON


def test_an_export_that_outlasts_the_answer_is_handed_off_and_found_by_who_asked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past its time in the API (`INLINE_S`), the export stops (its upload abandoned), and the
    answer is 202 with where to look; the look says "preparing" until the export function has
    made it whole, then 303 to the same export an answer would have held. Only who asked may
    look; a job that fails says so."""
    with dynamo_store() as store, serving(tmp_path, over=store, store="dynamodb") as server:
        client = aws_session().client("s3", config=s3.CLIENT_CONFIG)
        client.create_bucket(Bucket=BUCKET)
        jobs = Jobs()
        server.services.provide(files=S3Drop(BUCKET, client=client), exports=jobs)
        runs = seed_two_runs(server)
        path = f"/api/agents/{runs.path}/runs.jsonl"
        whole = httpx.get(server.url + path, params={"spans": 1, "model": "gpt-4o-mini"})
        assert whole.status_code == 200
        monkeypatch.setattr(export_jobs, "INLINE_S", -1.0)  # the server runs in this process
        handed = httpx.get(server.url + path, params={"spans": 1, "model": "gpt-4o-mini"})
        assert handed.status_code == 202, handed.text
        poll = handed.headers["location"]
        assert handed.json() == {"status": "preparing", "poll": poll, "retry_after_s": 5}
        assert handed.headers["retry-after"] == "5"
        assert client.list_multipart_uploads(Bucket=BUCKET).get("Uploads", []) == []
        assert httpx.get(server.url + poll).status_code == 202
        owner = {"X-Bench-Key": runs.key}
        assert httpx.get(server.url + poll, headers=owner).status_code == 404  # not theirs
        (job,) = jobs.payloads
        assert job["filters"] == {"model": "gpt-4o-mini"}
        ExportJobs(server.services)(job, LambdaContext(remaining_ms=900_000))
        ready = httpx.get(server.url + poll)
        assert ready.status_code == 303, ready.text
        link = ready.headers["location"]
        body = client.get_object(Bucket=BUCKET, Key=urlparse(link).path.lstrip("/"))["Body"].read()
        assert body == whole.content and b'"run_id": "run-a"' in body
        assert b'"run_id": "run-b"' not in body  # the filter travelled with the job
        assert not any(secret.encode() in body for secret in SECRETS)
        assert httpx.get(server.url + poll.replace(job["id"], "0" * 32)).status_code == 404
        bad = httpx.get(server.url + poll.replace(job["id"], "..%2F..%2Fx"))
        assert bad.status_code in (400, 404, 422)
        broken = {**job, "id": "f" * 32, "agent": f"{runs.login}/no-such-agent"}
        with pytest.raises(NotFound):
            ExportJobs(server.services)(broken, LambdaContext(remaining_ms=900_000))
        failed = httpx.get(server.url + poll.replace(job["id"], broken["id"]))
        assert failed.status_code == 500 and failed.json()["error"] == "the export failed"
        late = {**job, "id": "e" * 32}  # less time left than the function keeps for its mark
        with pytest.raises(export_jobs.Overrun):
            ExportJobs(server.services)(late, LambdaContext(remaining_ms=29_000))
        cut = httpx.get(server.url + poll.replace(job["id"], late["id"]))
        assert cut.status_code == 500, "an export cut off by its time says so"
        assert client.list_multipart_uploads(Bucket=BUCKET).get("Uploads", []) == []


def test_one_machine_has_no_jobs_to_look_at(bench_server: RunningServer) -> None:
    answer = httpx.get(f"{bench_server.url}/api/agents/a/b/exports/{'a' * 32}.csv")
    assert answer.status_code == 404 and "no such export" in answer.json()["error"]


def _template() -> dict[str, Any]:
    return cfn.load_template()


def test_the_export_bucket_is_private_encrypted_tls_only_and_forgets_in_a_day() -> None:
    resources = _template()["Resources"]
    bucket = resources["ExportBucket"]["Properties"]
    assert set(bucket["PublicAccessBlockConfiguration"].values()) == {True}
    assert len(bucket["PublicAccessBlockConfiguration"]) == 4
    assert bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"][0][
        "ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    assert bucket["OwnershipControls"]["Rules"] == [{"ObjectOwnership": "BucketOwnerEnforced"}]
    (rule,) = bucket["LifecycleConfiguration"]["Rules"]
    assert rule["ExpirationInDays"] == 1 and rule["Status"] == "Enabled"
    assert rule["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 1}
    (tls,) = resources["ExportBucketPolicy"]["Properties"]["PolicyDocument"]["Statement"]
    assert tls["Effect"] == "Deny" and tls["Condition"] == {
        "Bool": {"aws:SecureTransport": "false"}}


def test_only_the_api_and_export_functions_may_write_and_read_exports_and_nothing_more() -> None:
    template = _template()
    granted = {role: [s for s in cfn.role_statements(template, role)
                      if "ExportBucket" in json.dumps(s.get("Resource"))]
               for role in cfn.resources_of_type(template, "AWS::IAM::Role")}
    assert {role for role, found in granted.items() if found} == {"ApiRole", "ExportRole"}
    for role in ("ApiRole", "ExportRole"):
        (statement,) = granted[role]
        assert statement["Effect"] == "Allow"
        assert sorted(cfn.as_list(statement["Action"])) == [
            "s3:AbortMultipartUpload", "s3:GetObject", "s3:PutObject"]
        assert statement["Resource"] == {"Fn::Sub": "${ExportBucket.Arn}/" + s3.PREFIX + "*"}
    for function in ("ApiFunction", "ExportFunction"):
        variables = template["Resources"][function]["Properties"]["Environment"]["Variables"]
        assert cfn.resolve(variables["BENCH_EXPORT_BUCKET"], template,
                           {"ExportBucket": "the-bucket"}) == "the-bucket"
    others = [f for f in cfn.resources_of_type(template, "AWS::Serverless::Function")
              if f not in ("ApiFunction", "ExportFunction")
              and "BENCH_EXPORT_BUCKET" in json.dumps(template["Resources"][f])]
    assert others == []
    invokers = [role for role in cfn.resources_of_type(template, "AWS::IAM::Role")
                if any("ExportFunction" in json.dumps(s.get("Resource"))
                       for s in cfn.role_statements(template, role))]
    assert invokers == ["ApiRole"]  # the export function trusts its payload: only the API hands off


def test_one_machine_streams_and_has_no_drop(bench_server: RunningServer) -> None:
    assert bench_server.services.files is None
    runs = seed_two_runs(bench_server)
    with httpx.stream("GET", f"{bench_server.url}/api/agents/{runs.path}/runs.csv") as answer:
        assert answer.status_code == 200
        assert answer.headers.get("transfer-encoding") == "chunked"


# ---- through the deployed functions (API Gateway's events, Mangum, the template's roles) -----


def test_on_lambda_a_big_export_goes_to_the_bucket_with_only_the_granted_calls(
        transformed: dict[str, Any], site: Deployment, monkeypatch: pytest.MonkeyPatch) -> None:
    login = new_login()
    key = site.create_key(login)
    events = [*run_events("run-a", 100_000, b=False), *run_events("run-b", 200_000, b=True)]
    assert site.request("POST", "/ingest", headers={"X-Bench-Key": key},
                        json_body=batch("lambda-export", events)).status == 200
    path = f"/api/agents/{login}/lambda-export/runs.csv"
    whole = site.request("GET", path, query="spans=1")
    assert whole.status == 200, whole.body
    assert whole.headers["content-type"] == "text/csv; charset=utf-8"
    assert whole.body.count(b"\r\n") == 1 + 2 + 14  # the header, two runs, their spans
    monkeypatch.setattr(export, "ANSWER_BYTES", 1000)
    moved = site.request("GET", path, query="spans=1")
    assert moved.status == 303, moved.body
    link = moved.headers["location"]
    assert moved.json()["url"] == link
    client = aws_session().client("s3")
    stored = client.get_object(Bucket=site.refs["ExportBucket"],
                               Key=urlparse(link).path.lstrip("/"))["Body"].read()
    assert stored == whole.body and not any(s.encode() in stored for s in SECRETS)
    assert_granted(transformed, site.aws.calls, ["ApiFunction"])
    made = {op for who, service, op, _ in site.aws.calls if service == "s3" and who == "ApiFunction"}
    assert made == {"CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload"}


def test_on_lambda_the_web_function_draws_the_run_diff(site: Deployment) -> None:
    login = new_login()
    key = site.create_key(login)
    events = [*run_events("run-a", 100_000, b=False), *run_events("run-b", 200_000, b=True)]
    assert site.request("POST", "/ingest", headers={"X-Bench-Key": key},
                        json_body=batch("lambda-diff", events)).status == 200
    page = site.request("GET", f"/u/{login}/lambda-diff/runs/run-a/vs/run-b",
                        headers={"accept": "text/html"})
    assert page.status == 200, page.body[:300]
    assert b'data-first-divergence>parse</a>' in page.body
    assert site.api.invocations[-1] == "WebFunction"
    answer = site.request("GET", f"/api/agents/{login}/lambda-diff/runs/run-a/vs/run-b")
    assert answer.status == 200 and answer.json()["first_divergence"] == 5
    assert site.api.invocations[-1] == "ApiFunction"


def test_on_lambda_a_long_export_is_handed_to_the_export_function_with_only_the_granted_calls(
        transformed: dict[str, Any], site: Deployment, monkeypatch: pytest.MonkeyPatch) -> None:
    """The API function stops at its time, marks the job and invokes ExportFunction (an
    asynchronous invoke, as the template names it); ExportFunction, loaded as Lambda loads it in
    the environment the template gives it, makes the export; the API's look links it."""
    from unittest import mock

    from tests.aws.lambda_runtime import fresh_function_module
    from tests.aws.test_live_handlers import HandedOff

    handed_off = HandedOff(site)
    monkeypatch.setattr(botocore.client.BaseClient, "_make_api_call",
                        handed_off.wrap(botocore.client.BaseClient._make_api_call))
    login = new_login()
    key = site.create_key(login)
    events = [*run_events("run-a", 100_000, b=False), *run_events("run-b", 200_000, b=True)]
    assert site.request("POST", "/ingest", headers={"X-Bench-Key": key},
                        json_body=batch("lambda-job", events)).status == 200
    path = f"/api/agents/{login}/lambda-job/runs.csv"
    whole = site.request("GET", path, query="spans=1", headers={"X-Bench-Key": key})
    monkeypatch.setattr(export_jobs, "INLINE_S", -1.0)
    handed = site.request("GET", path, query="spans=1", headers={"X-Bench-Key": key})
    assert handed.status == 202, handed.body
    (params,) = handed_off.queued
    assert params["FunctionName"] == site.refs["ExportFunction"]
    assert_granted(transformed, site.aws.calls, ["ApiFunction"])
    poll = handed.headers["location"]
    assert site.request("GET", poll, headers={"X-Bench-Key": key}).status == 202
    site.aws.current = "ExportFunction"
    environment = cfn.environment(transformed, "ExportFunction", site.refs)
    with mock.patch.dict("os.environ", environment):
        function = fresh_function_module(cfn.functions(transformed)["ExportFunction"].code_dir)
        function.handler(json.loads(params["Payload"]),
                         LambdaContext("ExportFunction", remaining_ms=900_000))
    site.aws.current = "test"
    assert_granted(transformed, site.aws.calls, ["ExportFunction"])
    ready = site.request("GET", poll, headers={"X-Bench-Key": key})
    assert ready.status == 303, ready.body
    stored = aws_session().client("s3").get_object(
        Bucket=site.refs["ExportBucket"],
        Key=urlparse(ready.headers["location"]).path.lstrip("/"))["Body"].read()
    assert stored == whole.body and b"secret-final-run-a" in stored  # the owner's export
