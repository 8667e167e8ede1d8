"""Settings from the environment: the same names work in Lambda (the template sets them) and locally."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from .domain.hosts import Network, parse_networks
from .domain.ranking import Qualification


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    return int(raw) if raw not in (None, "") else default


def _float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    return float(raw) if raw not in (None, "") else default


BEDROCK_JUDGE_MODEL = "us.meta.llama3-3-70b-instruct-v1:0"
"""Llama 3.3 70B through its US cross-region inference profile: the bare model id is refused
for on-demand use in the US regions."""
BEDROCK_PRICE_PER_MTOK_USD = 0.72
"""Llama 3.3 70B on Bedrock, input and output alike, per million tokens (us-east-1 list price)."""


@dataclass(frozen=True)
class LLMSettings:
    """The judge/describer and the embedder (SPEC section 5). `provider` is `heuristic` (offline,
    no model), `openai_compat` (any `/v1/chat/completions` at `url`) or `bedrock` (Converse)."""

    provider: str = "heuristic"
    url: str | None = None
    model: str | None = None
    api_key: str | None = None
    bedrock_model: str = BEDROCK_JUDGE_MODEL
    timeout_s: float = 60.0
    """How long one model call may wait for its answer."""
    attempts: int = 4
    """Calls per ask when the model is unavailable (throttled, timing out)."""
    backoff_cap_s: float = 8.0
    """Longest wait between those calls."""
    price_per_mtok_usd: float = 0.0
    """Estimated cost per million tokens, recorded with each judgement (0 for local models)."""
    embedder: str = "tfidf"
    embed_model: str = "amazon.titan-embed-text-v2:0"
    embed_dimensions: int = 512

    @classmethod
    def from_env(cls, store: str) -> LLMSettings:
        on_aws = store == "dynamodb"
        url = os.environ.get("BENCH_LLM_URL") or None
        provider = os.environ.get("BENCH_LLM") or (
            "bedrock" if on_aws else "openai_compat" if url else "heuristic")
        price = BEDROCK_PRICE_PER_MTOK_USD if provider == "bedrock" else 0.0
        return cls(
            provider=provider, url=url, model=os.environ.get("BENCH_LLM_MODEL") or None,
            api_key=os.environ.get("BENCH_LLM_API_KEY") or None,
            bedrock_model=os.environ.get("BENCH_BEDROCK_MODEL") or BEDROCK_JUDGE_MODEL,
            timeout_s=_float("BENCH_LLM_TIMEOUT_S", 60.0),
            attempts=max(1, _int("BENCH_LLM_ATTEMPTS", 4)),
            backoff_cap_s=_float("BENCH_LLM_BACKOFF_CAP_S", 8.0),
            price_per_mtok_usd=_float("BENCH_LLM_PRICE_PER_MTOK_USD", price),
            embedder=os.environ.get("BENCH_EMBEDDER") or ("bedrock" if on_aws else "tfidf"),
            embed_model=os.environ.get("BENCH_EMBED_MODEL") or "amazon.titan-embed-text-v2:0",
            embed_dimensions=_int("BENCH_EMBED_DIMENSIONS", 512))


@dataclass(frozen=True)
class JudgeSettings:
    """How much judging a deployment does. The defaults keep a busy agent affordable: at about
    600 tokens a task and $0.72 per million tokens, $0.50 a day judges some 1,100 tasks a day
    (at most about $15 a month per agent); owners change both per agent."""

    daily_budget_usd: float = 0.50
    sample_rate: float = 1.0
    max_attempts: int = 3
    """Judge answers asked for per task before it is recorded as unscored."""
    subtasks: bool = False
    """Judge subtasks too (their scores stay on the subtask; the agent average is of runs)."""
    workers: int = 2
    """Local worker pool size (the single-machine server)."""
    prompt: str | None = None
    describe_prompt: str | None = None
    """Pinned prompt versions (`judge-v1`); None uses the newest in benchmarks/eval-prompts.md."""
    session_idle_minutes: float = 30.0
    """A session this long without a new run has ended: the hourly round judges it whole
    (`evals/session_judge.py`)."""

    @classmethod
    def from_env(cls) -> JudgeSettings:
        return cls(daily_budget_usd=_float("BENCH_JUDGE_DAILY_BUDGET_USD", 0.50),
                   sample_rate=_float("BENCH_JUDGE_SAMPLE_RATE", 1.0),
                   max_attempts=_int("BENCH_JUDGE_MAX_ATTEMPTS", 3),
                   subtasks=os.environ.get("BENCH_EVAL_SUBTASKS", "").lower() in ("1", "true"),
                   workers=_int("BENCH_WORKERS", 2),
                   prompt=os.environ.get("BENCH_JUDGE_PROMPT") or None,
                   describe_prompt=os.environ.get("BENCH_DESCRIBE_PROMPT") or None,
                   session_idle_minutes=_float("BENCH_SESSION_IDLE_MINUTES", 30.0))


@dataclass(frozen=True)
class Limits:
    """Ingest limits; generous for real agents, tight enough to keep one batch O(1) to process."""

    max_events_per_batch: int = 1000
    max_body_bytes: int = 5 * 1024 * 1024
    max_field_bytes: int = 32 * 1024
    recent_events: int = 1000
    event_retention_days: int = 30
    """How long raw events, and callers' usage records (`reuse.invoke.usage_expiry`), are kept
    (0: for ever); tasks, counters and evals stay (`retention`)."""
    max_agents_per_account: int = 100
    """Agents one account may have, however they come to exist (a first batch, an OTLP
    service name, a benchmark run, the dashboard); the store refuses the next one."""
    key_requests_per_s: int = 100
    """Ingest requests (`/ingest`, `/v1/traces`, `/v1/logs`) one API key may make a second,
    counted across processes (`accounts.key_rate`); 0: no limit. 100 lets an agent send
    5,000 events a second in the SDK's 50-event batches (the load model's hot agent sends
    2,000: 40 requests a second; tests/perf/load_model.py)."""


def _flag(name: str) -> bool | None:
    """A yes/no variable; None when unset, so a default can depend on other settings."""
    raw = os.environ.get(name, "").strip().lower()
    return None if raw == "" else raw in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class AccountSettings:
    """Sign-in, sessions, device login and the /try sandbox (bench_core.accounts).

    Secrets come from the environment locally (`session_secret`, `github_client_secret`) and
    from SSM on AWS, where the template passes parameter *names*, read through Powertools
    Parameters. Without any session secret the local server keeps a random one in its data
    directory. `local_signin` (BENCH_LOCAL_SIGNIN) turns sign-in by the console's one-time
    link on or off; None means on the embedded store. It is never on with GitHub sign-in or an
    https public URL, whatever it says (`accounts.signin_links.enabled`)."""

    session_secret: str | None = None
    session_secret_parameter: str | None = None
    github_client_id: str | None = None
    github_client_secret: str | None = None
    github_client_secret_parameter: str | None = None
    github_url: str = "https://github.com"
    github_api_url: str = "https://api.github.com"
    """Where GitHub's OAuth and REST endpoints are (tests point them at a stand-in)."""
    local_signin: bool | None = None
    device_interval_s: int = 5
    sandbox_per_hour: int = 5
    """New /try sandboxes one client (IP address) may start per hour."""

    @classmethod
    def from_env(cls) -> AccountSettings:
        return cls(
            session_secret=os.environ.get("BENCH_SESSION_SECRET") or None,
            session_secret_parameter=os.environ.get("BENCH_SESSION_SECRET_PARAMETER") or None,
            github_client_id=os.environ.get("BENCH_GITHUB_CLIENT_ID") or None,
            github_client_secret=os.environ.get("BENCH_GITHUB_CLIENT_SECRET") or None,
            github_client_secret_parameter=(
                os.environ.get("BENCH_GITHUB_CLIENT_SECRET_PARAMETER") or None),
            github_url=os.environ.get("BENCH_GITHUB_URL") or "https://github.com",
            github_api_url=os.environ.get("BENCH_GITHUB_API_URL") or "https://api.github.com",
            local_signin=_flag("BENCH_LOCAL_SIGNIN"),
            device_interval_s=_int("BENCH_DEVICE_INTERVAL_S", 5),
            sandbox_per_hour=_int("BENCH_SANDBOX_PER_HOUR", 5))

    @property
    def github_enabled(self) -> bool:
        return bool(self.github_client_id and (self.github_client_secret
                                               or self.github_client_secret_parameter))


@dataclass(frozen=True)
class LiveSettings:
    """The live feed (bench_core.live). Unset: the in-process feed of the local server. On AWS
    the template sets the WebSocket API's management endpoint (`https://…/{stage}`, for
    `post_to_connection`), its public `wss://` URL (for browsers) and, for the functions that
    ingest, the push function a batch is handed to (`push_function`)."""

    endpoint: str | None = None
    url: str | None = None
    push_function: str | None = None

    @classmethod
    def from_env(cls) -> LiveSettings:
        return cls(endpoint=os.environ.get("BENCH_LIVE_ENDPOINT") or None,
                   url=os.environ.get("BENCH_LIVE_URL") or None,
                   push_function=os.environ.get("BENCH_LIVE_PUSH_FUNCTION") or None)


def _ports(name: str, default: frozenset[int]) -> frozenset[int]:
    raw = os.environ.get(name, "").strip()
    return frozenset(int(p) for p in raw.split(",") if p.strip()) if raw else default


@dataclass(frozen=True)
class ReuseSettings:
    """Calls through Bench to published agents (bench_core.reuse): how far Bench reaches out.

    `allow_loopback` lets calls reach 127.0.0.1/::1 over plain http on any port, for the
    project's own tests only; the deployed template never sets it (a test checks)."""

    allowed_ports: frozenset[int] = frozenset({443})
    allow_loopback: bool = False
    timeout_s: float = 10.0
    max_response_bytes: int = 1024 * 1024
    max_input_bytes: int = 256 * 1024
    max_redirects: int = 3

    @classmethod
    def from_env(cls) -> ReuseSettings:
        return cls(allowed_ports=_ports("BENCH_REUSE_PORTS", frozenset({443})),
                   allow_loopback=bool(_flag("BENCH_REUSE_ALLOW_LOOPBACK_FOR_TESTS")),
                   timeout_s=_float("BENCH_REUSE_TIMEOUT_S", 10.0),
                   max_response_bytes=_int("BENCH_REUSE_MAX_RESPONSE_BYTES", 1024 * 1024),
                   max_input_bytes=_int("BENCH_REUSE_MAX_INPUT_BYTES", 256 * 1024))


SDK_DIST = Path(__file__).resolve().parent / "sdk_dist"
"""The SDK wheels inside bench_core, where packaging puts them (and the core layer carries them)."""


@dataclass(frozen=True)
class Settings:
    store: str = "sqlite"
    data_dir: Path = Path(".bench")
    table_name: str = "bench"
    public_url: str | None = None
    limits: Limits = field(default_factory=Limits)
    llm: LLMSettings = field(default_factory=LLMSettings)
    judge: JudgeSettings = field(default_factory=JudgeSettings)
    eval_queue_url: str | None = None
    cluster_state_machine_arn: str | None = None
    benchmark_state_machine_arn: str | None = None
    """Set on AWS: evals go to the eval queue (SQS), clusters and benchmark runs are Step
    Functions executions; unset, they run in this process."""
    accounts: AccountSettings = field(default_factory=AccountSettings)
    live: LiveSettings = field(default_factory=LiveSettings)
    reuse: ReuseSettings = field(default_factory=ReuseSettings)
    ranking: Qualification = field(default_factory=Qualification)
    """When a new agent first ranks on the leaderboard."""
    allowed_hosts: tuple[str, ...] = ()
    """Host names the server answers to besides loopback ones and `public_url`'s host."""
    trusted_proxies: tuple[Network, ...] = ()
    """Peers whose `X-Forwarded-For` names the client (`domain.hosts.client_address`)."""
    sdk_dist_dir: Path | None = SDK_DIST
    """Where the SDK wheels `/simple/` serves are (`make sdk-wheel` builds them there)."""
    heavy_reads: int = 4
    """Reads whose cost grows with the data (a run's page and JSON...) one process serves at
    once (`http.heavy_reads`); the others wait for a turn..."""
    heavy_read_wait_s: float = 5.0
    """...this long at most, then get 503 with Retry-After."""
    export_bucket: str | None = None
    """Set on AWS: the bucket an export too big for one Lambda answer is written to, answered
    with a short-lived link (`files/s3.py`); unset, exports stream."""
    export_function: str | None = None
    """Set on AWS: the function an export that outlasts an API answer is handed to
    (`reads/export_jobs.py`); unset, an export is made within the answer."""

    @classmethod
    def from_env(cls, **overrides: object) -> Settings:
        values: dict[str, object] = {
            "store": os.environ.get("BENCH_STORE", "sqlite"),
            "data_dir": Path(os.environ.get("BENCH_DATA_DIR", ".bench")),
            "table_name": os.environ.get("BENCH_TABLE_NAME", "bench"),
            "public_url": (os.environ.get("BENCH_PUBLIC_URL") or None),
            "limits": Limits(
                max_events_per_batch=_int("BENCH_MAX_EVENTS_PER_BATCH", 1000),
                max_body_bytes=_int("BENCH_MAX_BODY_BYTES", 5 * 1024 * 1024),
                max_field_bytes=_int("BENCH_MAX_FIELD_BYTES", 32 * 1024),
                event_retention_days=_int("BENCH_EVENT_RETENTION_DAYS", 30),
                max_agents_per_account=_int("BENCH_MAX_AGENTS_PER_ACCOUNT", 100),
                key_requests_per_s=_int("BENCH_INGEST_KEY_RATE", 100),
            ),
            "judge": JudgeSettings.from_env(),
            "eval_queue_url": os.environ.get("BENCH_EVAL_QUEUE_URL") or None,
            "cluster_state_machine_arn": os.environ.get("BENCH_CLUSTER_STATE_MACHINE_ARN") or None,
            "benchmark_state_machine_arn": os.environ.get("BENCH_BENCHMARK_STATE_MACHINE_ARN") or None,
            "accounts": AccountSettings.from_env(),
            "live": LiveSettings.from_env(),
            "reuse": ReuseSettings.from_env(),
            "ranking": Qualification(min_runs=_int("BENCH_RANK_MIN_RUNS", 5),
                                     min_age_hours=_float("BENCH_RANK_MIN_AGE_HOURS", 24.0)),
            "allowed_hosts": tuple(h.strip() for h in
                                   os.environ.get("BENCH_ALLOWED_HOSTS", "").split(",")
                                   if h.strip()),
            "trusted_proxies": parse_networks(os.environ.get("BENCH_TRUSTED_PROXIES", "")),
            "sdk_dist_dir": Path(os.environ["BENCH_SDK_DIST"]) if os.environ.get(
                "BENCH_SDK_DIST") else SDK_DIST,
            "heavy_reads": _int("BENCH_HEAVY_READS", 4),
            "heavy_read_wait_s": _float("BENCH_HEAVY_READ_WAIT_S", 5.0),
            "export_bucket": os.environ.get("BENCH_EXPORT_BUCKET") or None,
            "export_function": os.environ.get("BENCH_EXPORT_FUNCTION") or None,
        }
        values["llm"] = LLMSettings.from_env(str(overrides.get("store") or values["store"]))
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)  # type: ignore[arg-type]

    @property
    def sqlite_path(self) -> Path:
        return self.data_dir / "bench.db"

    @property
    def embedded_store(self) -> bool:
        """The store lives in this process (SQLite's file, or memory: `BENCH_STORE=memory`),
        so this is one machine: evals run in a local worker pool, the session secret and the
        sign-in link are local."""
        return self.store in ("sqlite", "memory")
