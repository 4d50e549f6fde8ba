"""The eval's arms default (issue 26's form defect): no arms asked for = the baseline and
every arm the intervention supports, resolved once by ``planned_arms`` (the CLI, the flow
and ``pairlab plan``) and frozen with the run; an explicit list is checked as before; a
resume with the default keeps the run's arms, never a new resolution."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from flows.evidence.resume import settle_params
from flows.params import EvidenceEvalParams
from pairlab.adapters.interventions import load_intervention
from pairlab.adapters.profiles import load_profile_file
from pairlab.adapters.run.directory import RunDir
from pairlab.adapters.run.frozen_settings import write_frozen_settings
from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.frozen_settings import resume_settings
from pairlab.core.intervention_wiring import planned_arms, require_arms
from pairlab.core.schemas.profile import RunnerProfile
from tests.support import REPO_ROOT, optimizer_only_manifest

ALL = ["baseline", "optimizer", "retrieval", "full"]
OPTIMIZER_ONLY = ["baseline", "optimizer"]


def _optimizer_only(tmp_path: Path) -> RunnerProfile:
    """The claude profile wired with a server that supports only the optimizer arm (as
    interventions/mcp-server-git.yaml; the reference server's command, nothing to install)."""
    manifest = optimizer_only_manifest(tmp_path)
    return load_profile_file(
        REPO_ROOT / "runner_profiles" / "claude.yaml", load_intervention(str(manifest))
    )


def test_no_arms_is_the_baseline_and_every_arm_the_intervention_supports(
    tmp_path: Path,
) -> None:
    profile = _optimizer_only(tmp_path)
    assert planned_arms([], profile.arm_args) == OPTIMIZER_ONLY
    require_arms(profile, planned_arms([], profile.arm_args))  # nothing refused
    reference = load_profile_file(REPO_ROOT / "runner_profiles" / "claude.yaml")
    assert planned_arms([], reference.arm_args) == ALL
    # in the arms' order, whatever the order offered; an offered arm it does not know: none
    assert planned_arms([], ["full", "baseline", "optimizer", "candidate"]) == [
        "baseline",
        "optimizer",
        "full",
    ]


def test_an_explicit_list_is_taken_as_given_and_an_unsupported_arm_refused(
    tmp_path: Path,
) -> None:
    profile = _optimizer_only(tmp_path)
    assert planned_arms(["optimizer", "baseline"], profile.arm_args) == ["optimizer", "baseline"]
    asked = planned_arms(ALL, profile.arm_args)
    assert asked == ALL  # never narrowed silently: the operator asked for them
    with pytest.raises(InvalidInputError) as refused:
        require_arms(profile, asked)
    assert refused.value.reason is ReasonCode.ARM_NOT_SUPPORTED
    assert "retrieval, full" in refused.value.message
    assert "leave them out" in refused.value.message


def test_the_default_is_an_empty_list_and_a_given_list_keeps_its_checks() -> None:
    assert EvidenceEvalParams().arms == []
    assert EvidenceEvalParams.model_validate({"arms": None}).arms == []  # API callers
    assert EvidenceEvalParams(arms=["baseline", "full"]).arms == ["baseline", "full"]
    for bad, why in [
        (["optimizer", "full"], "must include baseline"),
        (["baseline"], "treated arm beside baseline"),
        (["baseline", "full", "full"], "must not repeat"),
        (["baseline", "candidate"], "Input should be"),
    ]:
        with pytest.raises(ValidationError, match=why):
            EvidenceEvalParams.model_validate({"arms": bad})


FROZEN = {"suite": "core", "arms": OPTIMIZER_ONLY, "repetitions": 2, "run_id": "r1"}
UNTOUCHED = {"suite": "core", "arms": [], "repetitions": 5, "run_id": None}


def test_a_resume_with_the_default_takes_the_runs_resolved_arms() -> None:
    decision = resume_settings("r1", FROZEN, {**UNTOUCHED, "run_id": "r1"}, UNTOUCHED)
    assert decision.settings["arms"] == OPTIMIZER_ONLY
    assert "arms" in decision.taken_from_run
    # a run frozen with all four (the reference, or before the default was empty) keeps
    # them: the default never narrows a run
    four = {**FROZEN, "arms": ALL}
    decision = resume_settings("r1", four, {**UNTOUCHED, "run_id": "r1"}, UNTOUCHED)
    assert decision.settings["arms"] == ALL


def test_a_resume_asking_for_other_arms_is_refused() -> None:
    for asked in (ALL, ["baseline", "full"]):  # widening, or another arm
        with pytest.raises(InvalidInputError) as refused:
            resume_settings("r1", FROZEN, {**UNTOUCHED, "run_id": "r1", "arms": asked}, UNTOUCHED)
        assert refused.value.reason is ReasonCode.RESUME_CHANGED
        assert 'arms (run: ["baseline", "optimizer"], asked: ' in refused.value.message
    # the run's own list, given explicitly: nothing to say
    same = resume_settings(
        "r1", FROZEN, {**UNTOUCHED, "run_id": "r1", "arms": OPTIMIZER_ONLY}, UNTOUCHED
    )
    assert same.settings["arms"] == OPTIMIZER_ONLY and "arms" not in same.taken_from_run


def test_the_flows_resume_keeps_the_frozen_arms_and_planning_leaves_them(
    tmp_path: Path,
) -> None:
    """settle_params (what the flow does first) with the default on a run frozen with the
    resolved list: that list, which planned_arms then leaves as it is -- even when the
    profile now offers more arms (no widening) or fewer (require_arms refuses then)."""
    run_dir = RunDir(tmp_path / "work", "r1")
    run_dir.ensure()
    frozen = EvidenceEvalParams(run_id="r1", work_dir=str(tmp_path / "work"), arms=OPTIMIZER_ONLY)
    write_frozen_settings(run_dir, frozen.model_dump(mode="json"))
    asked = EvidenceEvalParams(run_id="r1", work_dir=str(tmp_path / "work"))
    assert asked.arms == []
    settled, decision = settle_params(asked, run_dir)
    assert settled.arms == OPTIMIZER_ONLY
    assert decision is not None and "arms" in decision.taken_from_run
    assert planned_arms(settled.arms, ALL) == OPTIMIZER_ONLY
    with pytest.raises(InvalidInputError) as refused:
        settle_params(asked.model_copy(update={"arms": ALL}), run_dir)
    assert refused.value.reason is ReasonCode.RESUME_CHANGED


def test_a_canary_on_an_account_runs_the_widest_supported_arm_by_default(
    tmp_path: Path,
) -> None:
    """The canary form's treated arm: empty = full, else retrieval, else optimizer --
    resolved once, and named in the frozen manifest's candidate revision."""
    from flows.canary.account import run_arm, with_treated_arm
    from flows.canary.manifest import canary_profile, compared
    from flows.params import CanaryTrialParams
    from pairlab.core.intervention_wiring import planned_treated_arm
    from pairlab.core.schedule import PlannedEpisode

    profile = _optimizer_only(tmp_path)
    assert CanaryTrialParams().treated_arm is None
    assert planned_treated_arm(None, profile.arm_args) == "optimizer"
    assert planned_treated_arm(None, ALL) == "full"
    assert planned_treated_arm(None, ["baseline", "optimizer", "retrieval"]) == "retrieval"
    assert planned_treated_arm("optimizer", ALL) == "optimizer"  # as given
    params = with_treated_arm(CanaryTrialParams(account="own", profile="claude"), profile)
    assert params.treated_arm == "optimizer"
    assert canary_profile(profile, account="own", treated_arm=None) == profile  # not refused
    assert compared(params, profile)[2] == "optimizer-only@0:optimizer-arm"
    candidate = PlannedEpisode.of("fix-median", 0, 1, "candidate", "t:fix-median:0")
    assert run_arm(params, candidate).arm == "optimizer"
    # an arm given that it does not support: refused, never replaced
    given = with_treated_arm(CanaryTrialParams(account="own", treated_arm="full"), profile)
    assert given.treated_arm == "full"
    with pytest.raises(InvalidInputError, match="does not support the arm full") as refused:
        canary_profile(profile, account="own", treated_arm=given.treated_arm)
    assert refused.value.reason is ReasonCode.ARM_NOT_SUPPORTED
    # the simulator's trial has no treated arm: left as it is
    assert with_treated_arm(CanaryTrialParams(), profile).treated_arm is None
