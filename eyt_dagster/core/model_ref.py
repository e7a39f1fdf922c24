"""One model in one role, as a slate names it: how it is reached and the settings that decide its answers.
Both benchmarks' roles are described by these."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from eyt_dagster.core.budget import SpendCap
from eyt_dagster.core.provider_profiles import ProfileName

PARTITION_KEY_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@/+-]*$")


class ModelRef(BaseModel):
    """One model in one role. `provider: embedded` selects a built-in baseline by `model` name."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="Stable name; a target's id is its Dagster partition key.")
    provider: Literal["embedded", "openai"] = "embedded"
    model: str = Field(description="Model name sent to the endpoint, or the embedded baseline's name.")
    family: str = Field(description="Model family, used to keep judge and target apart.")
    base_url: str | None = Field(default=None, description="OpenAI-compatible base URL, e.g. http://localhost:8000/v1")
    api_key_env: str | None = Field(default=None, description="Name of the environment variable holding the key.")
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=1024, gt=0)
    thinking: bool = Field(default=False, description="Reasoning/thinking mode on (sent as reasoning_effort).")
    reasoning_effort: Literal["minimal", "low", "medium", "high"] | None = None
    price_in_per_mtok: float = Field(default=0.0, ge=0.0, description="USD per million prompt tokens.")
    price_out_per_mtok: float = Field(default=0.0, ge=0.0, description="USD per million completion tokens.")
    timeout_s: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=4, ge=0, description="HTTP retries (429/5xx/timeouts), honouring Retry-After.")
    parse_retries: int = Field(default=2, ge=0, description="Re-asks after a reply that does not validate.")
    reply_attempts: int = Field(
        default=3,
        ge=1,
        description=(
            "How many times, counted across runs, one request is sent while its replies cannot be used (they did not "
            "validate, or were cut at max_tokens). A usable reply is cached and never asked for again; after this many "
            "unusable ones the last stands and the request is not sent again."
        ),
    )
    max_concurrency: int = Field(
        default=4,
        ge=1,
        description=(
            "Requests in flight to this endpoint (base URL + model) at once, across every caller of the process."
        ),
    )
    structured_output: Literal["auto", "json_schema", "json_object", "none"] = "auto"
    profile: ProfileName = Field(
        default="auto",
        description=(
            "What kind of server this is (eyt_dagster/core/provider_profiles.py): which parameters it takes, whether it "
            "honours response_format, where its reasoning arrives. auto: picked from base_url and model."
        ),
    )
    extra_body: dict[str, Any] = Field(
        default_factory=dict, description="Extra fields for the request body (server-specific)."
    )
    budget: SpendCap | None = Field(
        default=None,
        description="This model's own spend cap, over every call the ledger holds of it (docs/cost.md#spend-caps).",
    )

    @field_validator("id")
    @classmethod
    def _partition_safe(cls, value: str) -> str:
        if not PARTITION_KEY_RE.match(value) or len(value) > 120:
            raise ValueError(
                f"'{value}' cannot be a partition key: use letters, digits and . _ : @ / + - (no '|' or ',')"
            )
        return value

    @model_validator(mode="after")
    def _remote_needs_endpoint(self) -> ModelRef:
        if self.provider == "openai" and not self.base_url and not self.api_key_env:
            raise ValueError(f"model '{self.id}': provider openai needs base_url and/or api_key_env")
        if self.budget is not None and self.budget.caps_cost and not self.is_priced:
            raise ValueError(unpriced_under_cap(self.id, "its budget.max_cost_usd"))
        return self

    @property
    def is_baseline(self) -> bool:
        return self.provider == "embedded"

    @property
    def is_priced(self) -> bool:
        """True when a call of this model has a cost: a remote model with a price (an embedded one costs nothing)."""
        return self.price_in_per_mtok > 0 or self.price_out_per_mtok > 0

    def answer_settings(self) -> dict[str, Any]:
        """The settings that decide this model's replies and the numbers stored with them (prices give the cost
        columns): everything but the fields in NOT_ANSWER_FIELDS."""
        return self.model_dump(exclude=set(NOT_ANSWER_FIELDS))

    def fingerprint(self) -> str:
        """A hash of `answer_settings()` (never a key: the slate holds only the name of its variable)."""
        return hashlib.sha256(json.dumps(self.answer_settings(), sort_keys=True).encode()).hexdigest()[:12]


def unpriced_under_cap(model_id: str, cap: str) -> str:
    """Why a model without prices cannot be held to a USD cap (its calls would all cost $0 and never reach it)."""
    return (
        f"model '{model_id}' has no prices (price_in_per_mtok, price_out_per_mtok are 0) but {cap} caps it in USD: "
        "its calls would count as free and never reach the cap. Set its prices, or cap it by max_calls instead"
    )


# Fields that say how a model is named, reached or throttled, never what it answers: changing one makes no
# result stale (see docs/operations.md). `id` is the partition key or the role's name in the rows, tracked apart.
NOT_ANSWER_FIELDS = frozenset(
    {
        "id",
        "family",
        "benchmarks",
        "api_key_env",
        "timeout_s",
        "max_retries",
        "max_concurrency",
        "profile",
        "reply_attempts",
        "budget",
    }
)
