"""The capability card and invocation grants as they arrive: pydantic models at the edge (the
`capability` and `invocation` parts of `bench.agent.json`, the owner's grant form, a call's
body). What the store keeps of them is in `domain/reuse_records.py`."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AnyUrl,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
    model_validator,
)

from ..domain.models import LOGIN_PATTERN, SLUG_PATTERN

Text = Annotated[str, StringConstraints(strip_whitespace=True, max_length=2000)]
Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
Tag = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=50)]
MediaType = Annotated[str, StringConstraints(pattern=r"^[\w.+-]+/[\w.+-]+$", max_length=100)]
Example = Annotated[str, StringConstraints(max_length=2000)] | dict[str, Any]


class Skill(BaseModel):
    """One thing the agent does (after the A2A agent card's skills)."""

    model_config = ConfigDict(extra="forbid")

    id: Annotated[str, StringConstraints(pattern=SLUG_PATTERN)]
    name: Name
    description: Text = ""
    tags: Annotated[list[Tag], Field(max_length=20)] = []
    input_modes: Annotated[list[MediaType], Field(max_length=10)] = ["application/json"]
    output_modes: Annotated[list[MediaType], Field(max_length=10)] = ["application/json"]
    examples: Annotated[list[Example], Field(max_length=10)] = []


class Capability(BaseModel):
    """What the agent can do: `capability` in bench.agent.json."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal["1"] = "1"
    description: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1,
                                                  max_length=2000)]
    skills: Annotated[list[Skill], Field(max_length=50)] = []

    @field_validator("skills")
    @classmethod
    def _unique_ids(cls, skills: list[Skill]) -> list[Skill]:
        ids = [s.id for s in skills]
        if len(ids) != len(set(ids)):
            raise ValueError("skill ids must be unique")
        return skills


class Invocation(BaseModel):
    """How Bench reaches the agent: `invocation` in bench.agent.json. `disabled` publishes the
    card without taking calls."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["http", "disabled"]
    url: Annotated[AnyUrl, Field(max_length=2000)] | None = None

    @model_validator(mode="after")
    def _http_needs_url(self) -> Invocation:
        if self.mode == "http" and self.url is None:
            raise ValueError("mode http needs the url of the agent's endpoint")
        if self.mode == "disabled" and self.url is not None:
            raise ValueError("mode disabled takes no url")
        return self


class CapabilityCard(BaseModel):
    """The body of `PUT /api/agents/{login}/{slug}/capability`."""

    model_config = ConfigDict(extra="forbid")

    capability: Capability
    invocation: Invocation = Invocation(mode="disabled")


class GrantRequest(BaseModel):
    """The body of `POST /api/agents/{login}/{slug}/grants` (and the dashboard's form)."""

    model_config = ConfigDict(extra="forbid")

    caller: Annotated[str, StringConstraints(strip_whitespace=True, to_lower=True,
                                             pattern=f"{LOGIN_PATTERN}|^\\*$")]
    calls_per_day: Annotated[int, Field(ge=1, le=1_000_000)]
    calls_per_minute: Annotated[int, Field(ge=1, le=10_000)] | None = None
    expires_at: datetime | None = None

    @field_validator("expires_at")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)

    def refuse_expired(self, now: datetime) -> None:
        """A grant may not start expired (by the clock's `now`, which validation cannot see):
        raised as pydantic's own error for the field, so the API and the dashboard's form say
        it as they say every invalid field."""
        if self.expires_at is not None and self.expires_at <= now:
            raise ValidationError.from_exception_data(type(self).__name__, [{
                "type": "value_error", "loc": ("expires_at",), "input": self.expires_at,
                "ctx": {"error": ValueError("expires_at must be in the future")}}])


class InvokeRequest(BaseModel):
    """The body of `POST /api/agents/{login}/{slug}/invoke`."""

    model_config = ConfigDict(extra="forbid")

    input: Any
    skill: Annotated[str, StringConstraints(pattern=SLUG_PATTERN)] | None = None
