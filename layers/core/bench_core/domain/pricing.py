"""Evidence cost: token counts priced from Bench's own price table (`prices.json`).

Evidence is what a provider's usage report proves, not what anybody claims: the server prices
every evidence record itself, whatever cost a client put in it, so an SDK cannot inflate or
deflate it and the table can be corrected without a client release. A model the table does not
know keeps its token counts and gets no cost (None), never a guess.

Token conventions (OpenTelemetry GenAI semantic conventions): `input_tokens` counts every input
token, cached ones included; `cache_read_input_tokens` and `cache_creation_input_tokens` are
parts of it, `reasoning_output_tokens` is part of `output_tokens`.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

TABLE_PATH = Path(__file__).with_name("prices.json")
TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_read_input_tokens",
                "cache_creation_input_tokens", "reasoning_output_tokens")
EVIDENCE_LABEL = "evidence"
_PER_TOKEN = 1e-6
_DATE_SUFFIX = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2})$")
_VERSION_SUFFIX = re.compile(r"-v\d+(?::\d+)?$|:\d+$")
_BEDROCK_REGION = re.compile(r"^(?:us|eu|apac|global|regional|us-gov|jp|au)\.")
_BEDROCK_VENDORS = ("anthropic.", "openai.")
"""Vendors whose models Bedrock sells at the vendor's own list price, under the vendor's name."""


@dataclass(frozen=True)
class Price:
    """USD per million tokens of one model; a cache price of None means "billed as input"."""

    model: str
    provider: str
    input: float
    output: float
    cache_read: float | None
    cache_write: float | None
    source: str


@dataclass(frozen=True)
class PriceTable:
    as_of: str
    prices: dict[str, Price]

    def lookup(self, model: str | None) -> Price | None:
        """The price of `model` as providers and SDKs spell it: dated snapshots
        (`gpt-4o-2024-08-06`, `claude-sonnet-4-5-20250929`), `-latest` aliases, `vendor/model`
        routes and Bedrock ids (`us.anthropic.claude-...-v1:0`) find their base entry. Nothing
        looser: `claude-opus-4-7` must not be priced as `claude-opus-4`."""
        if not model:
            return None
        for name in _spellings(model):
            price = self.prices.get(name)
            if price is not None:
                return price
        return None

    def source_of(self, price: Price) -> str:
        return f"bench price table {self.as_of}: {price.source}"


def _spellings(model: str) -> Iterator[str]:
    name = model.strip().lower()
    yield name
    name = name.rsplit("/", 1)[-1]
    yield name
    name = _BEDROCK_REGION.sub("", name)
    yield name
    for vendor in _BEDROCK_VENDORS:
        name = name.removeprefix(vendor)
    name = _VERSION_SUFFIX.sub("", name)
    yield name
    name = name.removesuffix("-latest")
    yield _DATE_SUFFIX.sub("", name)


@functools.cache
def price_table(path: Path = TABLE_PATH) -> PriceTable:
    """The table, read once per process (on the first evidence record, not at import)."""
    raw = json.loads(path.read_text())
    sources: dict[str, str] = raw["sources"]
    prices = {
        name.lower(): Price(model=name, provider=entry["provider"], input=float(entry["input"]),
                            output=float(entry["output"]), cache_read=entry.get("cache_read"),
                            cache_write=entry.get("cache_write"),
                            source=entry.get("source") or sources[entry["provider"]])
        for name, entry in raw["models"].items()}
    return PriceTable(as_of=raw["as_of"], prices=prices)


def token_count(value: Any) -> int | None:
    """A token count as sent, or None when it is absent or not a count (a count of 0 stays 0)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, float) and math.isfinite(value) and value >= 0 and value.is_integer():
        return int(value)
    return None


def cost_usd(price: Price, tokens: dict[str, int | None]) -> float | None:
    """What the counted tokens cost at `price`; None when neither input nor output was counted.

    Cached tokens are part of `input_tokens` by convention; a producer that reports them
    separately (cache counts larger than the input count) is read that way instead of being
    billed a negative number of uncached tokens."""
    total_in, out = tokens.get("input_tokens"), tokens.get("output_tokens")
    if total_in is None and out is None:
        return None
    read = tokens.get("cache_read_input_tokens") or 0
    write = tokens.get("cache_creation_input_tokens") or 0
    total_in = total_in or 0
    uncached = total_in - read - write if read + write <= total_in else total_in
    amount = (uncached * price.input + read * _or(price.cache_read, price.input)
              + write * _or(price.cache_write, price.input) + (out or 0) * price.output)
    return round(amount * _PER_TOKEN, 12)


def _or(value: float | None, default: float) -> float:
    return default if value is None else value


NAME_FIELDS = ("provider", "model", "operation")
"""The evidence fields that are text: names, never content."""
_NAME_MAX = 100
_NAME = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._:/@+-]{{0,{_NAME_MAX - 1}}}")
"""What a provider, model or operation name looks like (`us.anthropic.claude-3-5-sonnet-v1:0`,
`meta-llama/Llama-3.3-70B`, `llama3.3:70b`): anything else could carry content, and evidence
is shown even where the owner hides outputs."""
DROPPED = "_bench_dropped"
"""Where a record notes the fields ingest dropped from it, as [field, reason] pairs."""
_PRICED = ("label", "cost_usd", "price_source", DROPPED)


def evidence_name(value: Any) -> str | None:
    """`value` if it is a name as evidence may carry one, else None."""
    return value if isinstance(value, str) and len(value) <= _NAME_MAX and _is_name(value) else None



@functools.lru_cache(maxsize=1024)
def _is_name(value: str) -> bool:
    """Cached (bounded, and only for strings short enough to be a name): a run's thousand
    evidence records name the same few providers and models."""
    return _NAME.fullmatch(value) is not None


def evidence_problems(data: dict[str, Any]) -> list[tuple[str, str]]:
    """The fields `price_evidence` drops from `data`, each with the reason."""
    problems = []
    for name, value in data.items():
        if name in NAME_FIELDS:
            if value is not None and evidence_name(value) is None:
                problems.append((name, "not a name: letters, digits and ._:/@+- only, "
                                       "at most 100 characters"))
        elif name in TOKEN_FIELDS:
            if value is not None and token_count(value) is None:
                problems.append((name, "not a token count"))
        elif name not in _PRICED:
            problems.append((name, "not an evidence field"))
    return problems


def price_evidence(data: dict[str, Any], table: PriceTable | None = None) -> dict[str, Any]:
    """An evidence record of names, token counts and the cost and price source from the table
    (None for both when the model is unknown or no tokens were counted); everything else is
    dropped (`evidence_problems` says what and why)."""
    table = table or price_table()
    names = {name: evidence_name(data.get(name)) for name in NAME_FIELDS}
    tokens = {name: token_count(data.get(name)) for name in TOKEN_FIELDS}
    price = table.lookup(names["model"])
    cost = cost_usd(price, tokens) if price is not None else None
    return {"label": EVIDENCE_LABEL, **names, **tokens, "cost_usd": cost,
            "price_source": table.source_of(price) if cost is not None and price else None}


def is_evidence(data: Any) -> TypeGuard[dict[str, Any]]:
    return isinstance(data, dict) and data.get("label") == EVIDENCE_LABEL


COST_LABEL = "cost"
"""The label of an owner's cost log (`t.cost()`): `{"label": "cost", "cost_usd": x,
"cost_details": {...}}`."""


def is_cost_log(data: Any) -> TypeGuard[dict[str, Any]]:
    return isinstance(data, dict) and data.get("label") == COST_LABEL


def cost_amount(value: Any) -> float | None:
    """`value` as an amount (USD, or a count): a finite number from 0 up, never a flag; else
    None. A cost field holding anything else is not a cost but content."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


def typed_cost_log(data: dict[str, Any]) -> dict[str, Any]:
    """A cost log whose `cost_usd` is an amount or None: one sent as anything else (text, an
    object) is moved among its `cost_details`, which are the owner's content, so the privacy
    gate shows it only where content is shown and no sum ever reads it."""
    sent = data.get("cost_usd")
    if sent is None or cost_amount(sent) is not None:
        return data
    details = data.get("cost_details")
    details = dict(details) if isinstance(details, dict) else (
        {} if details is None else {"cost_details": details})
    return {**data, "cost_usd": None, "cost_details": {**details, "cost_usd": sent}}


OWNER_REPORTED = "owner-reported"
PROVIDER_EVIDENCE = "provider evidence"


def cost_rule(owner: float | None, evidence: float | None) -> tuple[float, str | None]:
    """The one rule every cost headline follows (a run's, an agent's total or per run): the
    owner's own report where there is one, else the provider-evidence cost (an OTel-only agent
    reports none of its own, and "$0 owner-reported" would be a lie), each labelled with where
    it comes from; 0.0 unlabelled when neither priced anything."""
    if owner:
        return owner, OWNER_REPORTED
    if evidence:
        return evidence, PROVIDER_EVIDENCE
    return 0.0, None


def headline_fields(owner: float | None, evidence: float | None) -> dict[str, Any]:
    """`cost_rule` as the fields a read answer carries: `headline_cost_usd` and
    `headline_cost_source`."""
    usd, source = cost_rule(owner, evidence)
    return {"headline_cost_usd": usd, "headline_cost_source": source}


def headline_cost(owner_total: float, evidence_total: float, runs: int
                  ) -> tuple[float | None, str | None]:
    """The cost per run an agent's headline shows and where it comes from (`cost_rule` over
    its totals); (None, None) before the first run."""
    if not runs:
        return None, None
    usd, source = cost_rule(owner_total, evidence_total)
    return usd / runs, source


def models_seen(events: Iterable[Any], limit: int = 200) -> str | None:
    """The models a batch's evidence records name, sorted and comma-separated (at most `limit`
    characters), for an agent whose batch declares none: its profile names what it ran on."""
    models: set[str] = set()
    for event in events:
        data: Any = getattr(event, "body", {}).get("data")
        if is_evidence(data) and isinstance(data.get("model"), str) and data["model"]:
            models.add(data["model"])
    return ", ".join(sorted(models))[:limit] or None
