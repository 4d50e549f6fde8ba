"""What a cohort analysis is keyed by and measures: cohort key columns, effect metrics, contrasts."""

from __future__ import annotations

from typing import Final, NamedTuple

# ``intervention``: the record's intervention_key (id@version:hash), so cohorts are never
# pooled across interventions (issue 26)
KEY_COLUMNS: Final = (
    "client",
    "clientVersion",
    "model",
    "modelVersion",
    "taskId",
    "stratum",
    "intervention",
)
# Effect metrics, named as the episode record's camelCase fields; all lower-is-better.
METRICS: Final = (
    "uncachedInputTokens",
    "cachedInputTokens",
    "cacheWrite5mTokens",
    "cacheWrite1hTokens",
    "cacheWriteTokens",
    "outputTokens",
    "reasoningTokens",
    "totalTokens",
    "toolCalls",
    "latencyMs",
    "costUsd",
    "apiListPriceUsd",
)


class Contrast(NamedTuple):
    treatment: str
    control: str

    @property
    def label(self) -> str:
        return f"{self.treatment}-vs-{self.control}"
