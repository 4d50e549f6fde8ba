"""The verdict engine: artifact bytes or a file in, a :class:`VerdictReport` out.

Order: size and read → parse and validate → structure → per pair comparability,
quality, latency, token proxy, subscription → pair verdicts → overall verdict.
Never raises for bad input; every failure is a reason code and exit 2.

A pair is supported only when comparable and supported on quality, latency and
subscription; rejected when quality or latency rejects, or (if comparable) the
subscription does; otherwise inconclusive. An incomparable pair's subscription
and token-proxy verdicts are reported as inconclusive (their codes kept).
"""

from __future__ import annotations

import os
from pathlib import Path

from pairlab.core.verdict.artifact import MAX_ARTIFACT_BYTES, Artifact, Pair
from pairlab.core.verdict.comparability import assess_comparability
from pairlab.core.verdict.latency import assess_latency
from pairlab.core.verdict.loading import load_artifact
from pairlab.core.verdict.outcome import Verdict, combine_verdicts
from pairlab.core.verdict.quality import assess_quality
from pairlab.core.verdict.quota import assess_subscription
from pairlab.core.verdict.reasons import VerdictReason
from pairlab.core.verdict.report import PairVerdict, VerdictReport, refused
from pairlab.core.verdict.structure import check_structure
from pairlab.core.verdict.tokens import assess_token_proxy


def judge_pair(artifact: Artifact, pair: Pair) -> PairVerdict:
    incomparable = assess_comparability(artifact.intervention, pair)
    quality = assess_quality(pair.baseline, pair.candidate)
    latency = assess_latency(pair.baseline, pair.candidate)
    tokens = assess_token_proxy(pair.baseline, pair.candidate)
    subscription, quota_comparisons = assess_subscription(pair.baseline, pair.candidate)
    comparable = not incomparable
    gating = [quality.verdict, latency.verdict]
    if comparable:
        gating.append(subscription.verdict)
    verdict = combine_verdicts(gating)
    if not comparable and verdict is Verdict.SUPPORTED:
        verdict = Verdict.INCONCLUSIVE
    return PairVerdict(
        work_unit_id=pair.work_unit_id,
        stratum=pair.stratum,
        verdict=verdict,
        token_proxy_verdict=tokens.verdict if comparable else Verdict.INCONCLUSIVE,
        subscription_verdict=subscription.verdict if comparable else Verdict.INCONCLUSIVE,
        quality_verdict=quality.verdict,
        latency_verdict=latency.verdict,
        is_comparable=comparable,
        reasons=incomparable
        | quality.reasons
        | latency.reasons
        | tokens.reasons
        | subscription.reasons,
        quota_comparisons=tuple(quota_comparisons),
    )


def judge_artifact(artifact: Artifact) -> VerdictReport:
    structure = check_structure(artifact)
    if not structure.is_valid:
        pairs = tuple(
            PairVerdict(
                pair.work_unit_id,
                pair.stratum,
                Verdict.INCONCLUSIVE,
                Verdict.INCONCLUSIVE,
                Verdict.INCONCLUSIVE,
                reasons=reasons,
            )
            for pair, reasons in zip(artifact.pairs, structure.pair_reasons, strict=True)
        )
        every = structure.artifact_reasons.union(*structure.pair_reasons)
        return VerdictReport(
            Verdict.INCONCLUSIVE,
            reasons=every,
            pairs=pairs,
            intervention_id=artifact.intervention.id,
        )
    judged = tuple(judge_pair(artifact, pair) for pair in artifact.pairs)
    return VerdictReport(
        verdict=combine_verdicts(p.verdict for p in judged),
        token_proxy_verdict=combine_verdicts(p.token_proxy_verdict for p in judged),
        subscription_verdict=combine_verdicts(p.subscription_verdict for p in judged),
        reasons=frozenset().union(*(p.reasons for p in judged)),
        pairs=judged,
        intervention_id=artifact.intervention.id,
    )


def judge_artifact_bytes(data: bytes) -> VerdictReport:
    loaded = load_artifact(data)
    if loaded.artifact is None:
        return refused(*loaded.reasons, problems=loaded.problems)
    return judge_artifact(loaded.artifact)


def read_artifact_file(path: Path) -> bytes | VerdictReason:
    """The file's bytes, or why they cannot be judged (the size is checked before reading)."""
    try:
        with path.open("rb") as handle:
            if os.fstat(handle.fileno()).st_size > MAX_ARTIFACT_BYTES:
                return VerdictReason.INPUT_TOO_LARGE
            data = handle.read(MAX_ARTIFACT_BYTES + 1)
    except OSError:
        return VerdictReason.INPUT_READ_FAILED
    if len(data) > MAX_ARTIFACT_BYTES:  # grew after the size check, or not a regular file
        return VerdictReason.INPUT_TOO_LARGE
    return data


def judge_file(path: Path) -> VerdictReport:
    data = read_artifact_file(Path(path))
    if isinstance(data, VerdictReason):
        return refused(data)
    return judge_artifact_bytes(data)
