"""Retrieval economics: score every candidate finding, deliver only what pays, hold out a
seeded share of the eligible ones (pure; the intervention's ``recall`` does the I/O).

Per candidate (causal protocol seed, "Retrieval economics and safety"):

* ``relevance`` -- share of the finding's distinct terms (claim, applicability,
  anchors) found in the query, in [0, 1];
* ``confidence`` -- verified 1.0, probable 0.7, speculative 0.4;
* ``provenance`` -- catalog seed 0.9, the active model's ``wiki_write`` 0.8;
* ``recency`` -- exp(-age / 30 days);
* ``outcomes`` -- (helpful + 1) / (helpful + harmful + 1) from the ratings so far;
* ``costTokens`` -- the cl100k tokens of the text that would be delivered;
* ``riskTokens`` -- the share of the benefit at risk: 0.5 when stale, 0.25 when speculative.

``benefitTokens = BENEFIT_SCALE_TOKENS * relevance * confidence * provenance * recency
* outcomes``; a candidate is **eligible** when it is not quarantined, its relevance is
at least ``MIN_RELEVANCE`` and ``benefitTokens > costTokens + riskTokens``. An eligible
candidate is **held out** when ``u(seed, unit, findingId) < holdout_share`` (a SHA-256
uniform, so both arms of a pair and a re-run decide alike); the rest are delivered.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from pairlab.core.findings.graph import FindingState

BENEFIT_SCALE_TOKENS: Final = 2000.0
MIN_RELEVANCE: Final = 0.2
DEFAULT_HOLDOUT_SHARE: Final = 0.5
RECENCY_DAYS: Final = 30.0
CONFIDENCE: Final = {"verified": 1.0, "probable": 0.7, "speculative": 0.4}
PROVENANCE: Final = {"seed": 0.9, "wiki_write": 0.8}
STALE_RISK: Final = 0.5
SPECULATIVE_RISK: Final = 0.25
_TERM = re.compile(r"[a-z0-9_]{3,}")
_STOP: Final = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "that",
        "this",
        "are",
        "was",
        "were",
        "from",
        "into",
        "when",
        "then",
        "than",
        "not",
        "but",
        "its",
        "has",
        "have",
        "does",
        "did",
        "you",
        "your",
        "use",
        "used",
        "uses",
        "other",
        "only",
        "all",
        "any",
        "one",
        "two",
    ]
)


def terms(text: str) -> frozenset[str]:
    return frozenset(t for t in _TERM.findall(text.lower()) if t not in _STOP)


@dataclass(frozen=True)
class Scored:
    finding_id: str
    relevance: float
    confidence: float
    provenance: float
    recency: float
    outcomes: float
    benefit_tokens: float
    cost_tokens: int
    risk_tokens: float
    stale: bool
    quarantined: bool

    @property
    def eligible(self) -> bool:
        return (
            not self.quarantined
            and self.relevance >= MIN_RELEVANCE
            and self.benefit_tokens > self.cost_tokens + self.risk_tokens
        )

    def to_json(self) -> dict[str, object]:
        return {
            "findingId": self.finding_id,
            "relevance": round(self.relevance, 4),
            "confidence": self.confidence,
            "provenance": self.provenance,
            "recency": round(self.recency, 4),
            "outcomes": round(self.outcomes, 4),
            "benefitTokens": round(self.benefit_tokens, 1),
            "costTokens": self.cost_tokens,
            "riskTokens": round(self.risk_tokens, 1),
            "stale": self.stale,
            "eligible": self.eligible,
        }


def _age_days(written_at: str, now: datetime) -> float:
    try:
        written = datetime.fromisoformat(written_at)
    except ValueError:
        return RECENCY_DAYS  # unknown age: counted as one time constant old
    if written.tzinfo is None or now.tzinfo is None:
        return RECENCY_DAYS
    return max(0.0, (now - written).total_seconds() / 86400.0)


def score(
    finding: FindingState, query: str, *, now: datetime, stale: bool, cost_tokens: int
) -> Scored:
    draft = finding.draft
    own = terms(" ".join([draft.claim, draft.applicability, *(a.label for a in draft.anchors)]))
    relevance = len(own & terms(query)) / len(own) if own else 0.0
    confidence = CONFIDENCE.get(draft.confidence_label, CONFIDENCE["speculative"])
    provenance = PROVENANCE.get(finding.source, PROVENANCE["wiki_write"])
    recency = math.exp(-_age_days(finding.written_at, now) / RECENCY_DAYS)
    outcomes = (finding.helpful + 1) / (finding.helpful + finding.harmful + 1)
    benefit = BENEFIT_SCALE_TOKENS * relevance * confidence * provenance * recency * outcomes
    risk = benefit * (
        (STALE_RISK if stale else 0.0)
        + (SPECULATIVE_RISK if draft.confidence_label == "speculative" else 0.0)
    )
    return Scored(
        finding_id=finding.finding_id,
        relevance=relevance,
        confidence=confidence,
        provenance=provenance,
        recency=recency,
        outcomes=outcomes,
        benefit_tokens=benefit,
        cost_tokens=cost_tokens,
        risk_tokens=risk,
        stale=stale,
        quarantined=finding.quarantined,
    )


def holdout_draw(seed: str, unit: str, finding_id: str) -> float:
    """A uniform in [0, 1) from SHA-256 of (seed, unit, finding): stable, seeded."""
    digest = hashlib.sha256(f"pairlab.holdout.v1|{seed}|{unit}|{finding_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


@dataclass(frozen=True)
class Selection:
    delivered: tuple[Scored, ...]
    held_out: tuple[Scored, ...]
    ineligible: tuple[Scored, ...]


def select(scored: list[Scored], *, seed: str, unit: str, holdout_share: float) -> Selection:
    """Split candidates into delivered, held out (seeded) and ineligible, best first."""
    ranked = sorted(scored, key=lambda s: (-s.benefit_tokens, s.finding_id))
    delivered, held, ineligible = [], [], []
    for cand in ranked:
        if not cand.eligible:
            ineligible.append(cand)
        elif holdout_draw(seed, unit, cand.finding_id) < holdout_share:
            held.append(cand)
        else:
            delivered.append(cand)
    return Selection(tuple(delivered), tuple(held), tuple(ineligible))
