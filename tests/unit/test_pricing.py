"""The price table and evidence pricing (bench_core.domain.pricing)."""

from __future__ import annotations

import json
import re

import pytest
from bench_core.domain.pricing import TABLE_PATH, cost_usd, price_evidence, price_table, token_count


def test_the_table_file_names_its_date_unit_and_a_source_for_every_model() -> None:
    raw = json.loads(TABLE_PATH.read_text())
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", raw["as_of"])
    assert "1,000,000 tokens" in raw["unit"]
    for name, entry in raw["models"].items():
        source = entry.get("source") or raw["sources"][entry["provider"]]
        assert source.startswith("https://"), name
        assert entry["input"] >= 0 and entry["output"] >= 0, name
        assert name == name.lower(), name


@pytest.mark.parametrize(("spelled", "entry"), [
    ("gpt-4o", "gpt-4o"),
    ("GPT-4o", "gpt-4o"),
    ("gpt-4o-2024-08-06", "gpt-4o"),
    ("gpt-4o-2024-05-13", "gpt-4o-2024-05-13"),
    ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
    ("openai/gpt-4.1-mini", "gpt-4.1-mini"),
    ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
    ("claude-3-5-haiku-latest", "claude-3-5-haiku"),
    ("claude-opus-4-20250514", "claude-opus-4"),
    ("us.anthropic.claude-3-5-sonnet-20240620-v1:0", "claude-3-5-sonnet"),
    ("us.meta.llama3-3-70b-instruct-v1:0", "meta.llama3-3-70b-instruct"),
])
def test_providers_spellings_of_a_model_find_its_entry(spelled: str, entry: str) -> None:
    price = price_table().lookup(spelled)
    assert price is not None and price.model == entry


@pytest.mark.parametrize("unknown", [None, "", "my-finetune-7b", "gpt-4o-ultra", "claude-opus-4-99",
                                     "llama3.3:70b"])
def test_no_near_miss_is_priced(unknown: str | None) -> None:
    assert price_table().lookup(unknown) is None


def test_cached_input_is_billed_at_the_cache_prices() -> None:
    sonnet = price_table().lookup("claude-sonnet-4-5")
    tokens = {"input_tokens": 10_000, "output_tokens": 1_000, "cache_read_input_tokens": 6_000,
              "cache_creation_input_tokens": 2_000}
    expected = (2_000 * 3 + 6_000 * 0.3 + 2_000 * 3.75 + 1_000 * 15) / 1e6
    assert cost_usd(sonnet, tokens) == pytest.approx(expected)


def test_cache_counts_reported_outside_the_input_count_are_not_subtracted_from_it() -> None:
    """Anthropic's own usage block counts cache tokens apart from `input_tokens`."""
    sonnet = price_table().lookup("claude-sonnet-4-5")
    tokens = {"input_tokens": 100, "output_tokens": 0, "cache_read_input_tokens": 6_000}
    assert cost_usd(sonnet, tokens) == pytest.approx((100 * 3 + 6_000 * 0.3) / 1e6)


def test_a_model_without_a_cache_price_bills_cached_tokens_as_input() -> None:
    gpt4 = price_table().lookup("gpt-4")
    tokens = {"input_tokens": 1_000, "output_tokens": 0, "cache_read_input_tokens": 400}
    assert cost_usd(gpt4, tokens) == pytest.approx(1_000 * 30 / 1e6)


def test_nothing_counted_costs_nothing_known() -> None:
    assert cost_usd(price_table().lookup("gpt-4o"), {"cache_read_input_tokens": 5}) is None


def test_evidence_is_priced_whatever_the_sender_claimed() -> None:
    data = price_evidence({"label": "evidence", "model": "gpt-4o-mini", "input_tokens": 1_000_000,
                           "output_tokens": 1_000_000, "cost_usd": 123.0})
    assert data["cost_usd"] == pytest.approx(0.15 + 0.6)
    assert data["price_source"] == (f"bench price table {price_table().as_of}: "
                                    "https://openai.com/api/pricing/")
    unknown = price_evidence({"label": "evidence", "model": "mystery", "input_tokens": 5,
                              "cost_usd": 1.0})
    assert unknown["cost_usd"] is None and unknown["price_source"] is None
    assert unknown["input_tokens"] == 5 and unknown["output_tokens"] is None


@pytest.mark.parametrize(("sent", "kept"), [(0, 0), (12, 12), (3.0, 3), (None, None), (-1, None),
                                            (True, None), ("7", None), (1.5, None)])
def test_token_counts_are_kept_only_when_they_are_counts(sent: object, kept: int | None) -> None:
    assert token_count(sent) == kept
