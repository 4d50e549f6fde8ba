"""The verdict engine: artifact bytes or a file in, a :class:`VerdictReport` out.

loom's algorithm (LOOM-ARTIFACT §2): read (size first) → decode → version →
whole-artifact checks (each failure: every verdict inconclusive, no pairs,
exit 2). Then every pair is judged, whatever the others hold:

* structure, then — only for a structurally valid pair — comparability;
* quality and latency, always;
* token proxy and subscription only for a valid, comparable pair; otherwise
  ``incomparable-pair`` and both inconclusive;
* pair verdict: rejected when quality, latency or subscription rejects (even
  for an incomparable pair); supported only when the pair is comparable and all
  three are supported; otherwise inconclusive. The token proxy never counts.

Across pairs, each verdict separately: any rejected → rejected; all supported
→ supported; else inconclusive. Never raises for bad input.
"""

from __future__ import annotations

from pathlib import Path

from pairlab.core.verdict.artifact import Artifact, Pair
from pairlab.core.verdict.comparability import assess_comparability
from pairlab.core.verdict.latency import assess_latency
from pairlab.core.verdict.loading import load_artifact, read_artifact_file
from pairlab.core.verdict.outcome import Assessment, Finding, Verdict, aggregate, worst
from pairlab.core.verdict.quality import assess_quality
from pairlab.core.verdict.quota import judge_subscription, quota_evidence
from pairlab.core.verdict.reasons import VerdictReason
from pairlab.core.verdict.report import PairVerdict, VerdictReport, refused
from pairlab.core.verdict.structure import artifact_findings, duplicate_run_ids, pair_findings
from pairlab.core.verdict.tokens import assess_token_proxy

INCOMPARABLE = Finding(
    VerdictReason.INCOMPARABLE_PAIR,
    "the pair is not a like-for-like comparison, so neither tokens nor quota are compared",
)


def judge_pair(artifact: Artifact, pair: Pair, duplicates: frozenset[str]) -> PairVerdict:
    base, cand = pair.baseline, pair.candidate
    structure = pair_findings(artifact, pair, duplicates)
    comparability = () if structure else assess_comparability(artifact.intervention, pair)
    valid = not structure and not comparability
    quality = assess_quality(pair)
    latency = assess_latency(pair)
    findings = [*structure, *comparability, *quality.findings, *latency.findings]
    tokens: Assessment | None = None
    subscription: Assessment | None = None
    if valid:
        tokens = assess_token_proxy(base, cand)
        subscription = judge_subscription(
            base.quota_observations, cand.quota_observations
        ).assessment
        findings += [*tokens.findings, *subscription.findings]
    else:
        findings.append(INCOMPARABLE)
    token_verdict = tokens.verdict if tokens else Verdict.INCONCLUSIVE
    subscription_verdict = subscription.verdict if subscription else Verdict.INCONCLUSIVE
    gating = (quality.verdict, latency.verdict, subscription_verdict)
    verdict = worst(gating)
    if verdict is Verdict.SUPPORTED and not valid:
        verdict = Verdict.INCONCLUSIVE
    return PairVerdict(
        work_unit_id=pair.work_unit_id,
        verdict=verdict,
        token_proxy_verdict=token_verdict,
        subscription_verdict=subscription_verdict,
        reasons=frozenset(f.reason for f in findings),
        baseline_tokens=dict(base.provider_tokens),
        candidate_tokens=dict(cand.provider_tokens),
        quota_comparisons=quota_evidence(base.quota_observations, cand.quota_observations),
        structure=structure,
        comparability=comparability,
        quality=quality,
        latency=latency,
        token_proxy=tokens,
        subscription=subscription,
    )


def judge_artifact(artifact: Artifact) -> VerdictReport:
    refusal = artifact_findings(artifact)
    if refusal:
        return refused(*refusal)
    duplicates = duplicate_run_ids(artifact)
    pairs = tuple(judge_pair(artifact, pair, duplicates) for pair in artifact.pairs)
    return VerdictReport(
        verdict=aggregate(p.verdict for p in pairs),
        token_proxy_verdict=aggregate(p.token_proxy_verdict for p in pairs),
        subscription_verdict=aggregate(p.subscription_verdict for p in pairs),
        reasons=frozenset().union(*(p.reasons for p in pairs)),
        pairs=pairs,
    )


_REFUSALS = {
    VerdictReason.INPUT_READ_FAILED: "the file could not be opened or read",
    VerdictReason.INPUT_TOO_LARGE: "the file is larger than 16 MiB (16,777,216 bytes)",
    VerdictReason.MALFORMED_INPUT: "the file does not decode into the version-1 schema",
    VerdictReason.UNSUPPORTED_SCHEMA_VERSION: "the artifact's schema_version is not 1",
}


def refusal(reason: VerdictReason) -> Finding:
    """A whole-artifact failure of reading or decoding, with its plain sentence."""
    return Finding(reason, _REFUSALS[reason])


def judge_artifact_bytes(data: bytes) -> VerdictReport:
    loaded = load_artifact(data)
    if loaded.artifact is None:
        assert loaded.reason is not None
        return refused(refusal(loaded.reason), problems=loaded.problems)
    return judge_artifact(loaded.artifact)


def judge_file(path: Path) -> VerdictReport:
    data = read_artifact_file(Path(path))
    if isinstance(data, VerdictReason):
        return refused(refusal(data))
    return judge_artifact_bytes(data)
