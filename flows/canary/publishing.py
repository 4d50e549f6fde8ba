"""Publishing a judged canary (DESIGN 9, step 5): the report and the run, with its approval.

``report.md`` is the frozen manifest headed by the verdict, the approver and the
interval overruns; then the whole run dir (manifest, approval, evidence,
artifact, verdict, episodes) is published to the store, redacted as configured.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flows.canary.manifest import manifest_markdown
from flows.params import CanaryTrialParams
from pairlab.adapters.run.directory import RunDir
from pairlab.core.canary import RunEvidence, TrialManifest
from pairlab.core.verdict import VerdictReport
from tasks.report import publish_run_outputs


def publish_trial(
    params: CanaryTrialParams,
    run_dir: RunDir,
    manifest: TrialManifest,
    approval: dict[str, Any],
    evidence: Sequence[RunEvidence],
    report: VerdictReport,
    stopped: str | None = None,
    limited: str | None = None,
) -> dict[str, Any]:
    """Write report.md, publish the run; returns what was published and the overruns.
    ``stopped``: the percent ceiling's words when the trial stopped at it (judged on the
    pairs that ran); ``limited``: the provider limit's words when one stopped it (the
    limited run excluded, judged on the complete pairs, the verdict not the trial's)."""
    overruns = [e.episode_id for e in evidence if e.interval_overrun]
    stop = (
        ""
        if stopped is None
        else f"\nSTOPPED AT THE BUDGET CEILING (budget-exhausted): {stopped}; "
        f"{len(evidence)} of {len(manifest.planned)} runs done, judged on the complete pairs.\n"
    )
    if limited is not None:
        excluded = sum(1 for e in evidence if e.excluded_reason is not None)
        stop += (
            f"\nSTOPPED BY A PROVIDER LIMIT (provider-limit): {limited}. {excluded} run(s) "
            f"excluded as provider-limit; {len(evidence)} of {len(manifest.planned)} runs "
            "done, judged on the complete pairs only: this verdict is not the trial's. "
            "Resume with the same Run Id once the limit lifts: the limited pair runs again.\n"
        )
    run_dir.write_text(
        "report.md",
        manifest_markdown(manifest, heading=f"verdict {report.verdict}")
        + f"\nApproved by {approval['approver']}. Interval overruns: {len(overruns)}.\n"
        + stop,
    )
    published = publish_run_outputs(run_dir.path, params.store, params.on_secret)
    return {"interval_overruns": overruns, "published": published}
