"""The skewness gate (pairlab.core.stats.skew_gate): an analysis decides only the shapes
its decision interval is calibrated for, and says how many pairs the others need."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats  # type: ignore[import-untyped]

from pairlab.core.analysis.cohorts import analyse_cohorts, render_cohort_table
from pairlab.core.analysis.decisions import DECISIONS, REASONS, label_effects
from pairlab.core.analysis.metrics import Contrast
from pairlab.core.analysis.study_plan import StudyPlan
from pairlab.core.schemas.episode import EpisodeRecord, make_episode_id, make_pair_id
from pairlab.core.stats.one_cohort import worst_shape_critical, worst_shape_p
from pairlab.core.stats.seeds import make_rng
from pairlab.core.stats.skew_gate import (
    CALIBRATED_SIGMA,
    MAX_CALIBRATED_PAIRS,
    MEAN_G1,
    MEAN_G1_PAIRS,
    MEAN_G1_SIGMAS,
    judge_shape,
    pairs_needed,
    sample_skewness,
    tau,
)
from tests.stats_calibration import mean_g1_table
from tests.support import cli_exit


def test_sample_skewness_is_the_adjusted_fisher_pearson_coefficient() -> None:
    data = make_rng("skew-test", "g1").lognormal(0.0, 0.7, (9, 40))
    assert np.allclose(sample_skewness(data), stats.skew(data, axis=0, bias=False))
    flat = np.ones((6, 2))
    flat[:, 1] = [1, 2, 3, 4, 5, 6]
    got = sample_skewness(flat)
    assert np.isnan(got[0]) and got[1] == pytest.approx(0.0)  # no spread: NaN, never 0
    assert np.isnan(sample_skewness(np.ones((2, 3)))).all()  # fewer than 3 pairs


def test_the_tabulated_mean_skewness_is_reproduced_by_its_generator() -> None:
    rows = [MEAN_G1_PAIRS.index(8), MEAN_G1_PAIRS.index(25)]
    cols = [MEAN_G1_SIGMAS.index(CALIBRATED_SIGMA), MEAN_G1_SIGMAS.index(1.0)]
    got = mean_g1_table(tuple(MEAN_G1_PAIRS[r] for r in rows), (CALIBRATED_SIGMA, 1.0))
    assert np.array_equal(np.array(got), MEAN_G1[np.ix_(rows, cols)])
    # more skewed shapes and more pairs give larger mean G1 (it is biased low at few pairs)
    assert (np.diff(MEAN_G1, axis=1) > 0).all() and (np.diff(MEAN_G1[:, 1:], axis=0) > 0).all()
    assert tau(8) == pytest.approx(MEAN_G1[MEAN_G1_PAIRS.index(8), 2])


def _cohorts(sigma: float, sign: float, cohorts: int, pairs: int, name: str) -> np.ndarray:
    rng = make_rng("skew-test", name, str(sigma), str(cohorts), str(pairs))
    if sigma == 0:
        return np.asarray(rng.normal(0.0, 1.0, (pairs, cohorts)))
    return np.asarray(sign * rng.lognormal(0.0, sigma, (pairs, cohorts)))


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_many_skewed_cohorts_are_judged_skewed_towards_their_tail(sign: float) -> None:
    g = sample_skewness(_cohorts(1.0, sign, 20, 8, "tail"))
    verdict = judge_shape(g[:, None], np.full((20, 1), 8))
    assert verdict.direction[0] == sign and verdict.cohorts[0] == 20
    # sigma 1 is beyond what the calibration reaches: pairs needed unknown (-1)
    needed = int(verdict.pairs_needed[0])
    assert needed == -1 or needed > MAX_CALIBRATED_PAIRS // 2


def test_symmetric_cohorts_and_a_single_cohort_are_not_judged_skewed() -> None:
    normal = sample_skewness(_cohorts(0.0, 1.0, 40, 10, "normal"))
    assert not judge_shape(normal[:, None], np.full((40, 1), 10)).skewed.any()
    one = sample_skewness(_cohorts(1.0, 1.0, 1, 10, "one"))  # a very skewed sample, alone
    alone = judge_shape(one[:, None], np.full((1, 1), 10))
    assert not alone.skewed.any() and alone.cohorts[0] == 1
    # NaN (no spread / not tested) is not a cohort
    with_nan = np.concatenate([normal, [np.nan, np.nan]])
    assert judge_shape(with_nan[:, None], np.full((42, 1), 10)).cohorts[0] == 40


def test_pairs_needed_grows_with_the_skew_and_stops_at_the_calibration() -> None:
    n = np.full(10, 8)
    at = [pairs_needed(np.full(10, MEAN_G1[4, j]), n) for j in range(len(MEAN_G1_SIGMAS))]
    assert at == sorted(at, key=lambda p: p if p > 0 else 10**9)
    assert at[MEAN_G1_SIGMAS.index(CALIBRATED_SIGMA)] == 8
    assert at[MEAN_G1_SIGMAS.index(0.5)] == 100
    assert at[MEAN_G1_SIGMAS.index(0.75)] == MAX_CALIBRATED_PAIRS == 400
    assert at[MEAN_G1_SIGMAS.index(1.0)] == -1
    # the same shape at 100 pairs per cohort is tolerated: no longer judged skewed
    wide = sample_skewness(_cohorts(0.45, 1.0, 30, 100, "wide"))
    assert not judge_shape(wide[:, None], np.full((30, 1), 100)).skewed.any()
    assert judge_shape(wide[:, None], np.full((30, 1), 25)).skewed.all()


def test_a_skewed_contrast_is_insufficient_and_leaves_the_families() -> None:
    plan = StudyPlan(
        id="p", min_pairs=5, primary_contrasts=["optimizer-vs-baseline", "full-vs-baseline"]
    )
    contrasts = [Contrast("optimizer", "baseline"), Contrast("full", "baseline")]
    metrics = ["totalTokens"]
    k = 12
    n = np.full((k, 2, 1), 10)
    p_saving = np.full((k, 2, 1), 0.001)  # every test a clear saving
    skew = np.zeros((k, 2, 1))
    skew[:, 0, 0] = sample_skewness(_cohorts(1.0, 1.0, k, 10, "labels"))
    skew[:, 1, 0] = sample_skewness(_cohorts(0.0, 1.0, k, 10, "labels"))
    common: dict[str, Any] = {
        "gate": 5,
        "n": n,
        "p_saving": p_saving,
        "p_increase": 1 - p_saving,
        "percentile_high": np.full((k, 2, 1), -1.0),
        "correctness_holds": np.ones((k, 2), bool),
        "graded": np.ones((k, 2), bool),
        "metrics": metrics,
    }
    gated = label_effects(plan, contrasts, skewness=skew, **common)
    assert (gated.decision[:, 0, 0] == DECISIONS.index("insufficient")).all()
    assert (gated.reason[:, 0, 0] == REASONS.index("skewed")).all()
    assert np.isnan(gated.p_adjusted[:, 0, 0]).all()
    assert (gated.decision[:, 1, 0] == DECISIONS.index("primary-win")).all()
    assert gated.shape is not None and gated.shape.skewed.tolist() == [[True], [False]]
    # Holm over the one remaining primary test: its adjusted p is its own
    assert gated.p_adjusted[:, 1, 0] == pytest.approx(0.002)
    ungated = label_effects(plan, contrasts, skewness=None, **common)
    assert (ungated.decision == DECISIONS.index("primary-win")).all() and ungated.shape is None
    assert ungated.p_adjusted[:, 1, 0] == pytest.approx(0.004)


def _records(tasks: int, pairs: int, sigma: float) -> list[EpisodeRecord]:
    """Cohorts whose optimizer-vs-baseline totalTokens differences are lognormal (sigma),
    long tail towards costs, centred on a saving of 50 tokens."""
    rng = make_rng("skew-test", "records", str(tasks), str(pairs), str(sigma))
    out = []
    for t in range(tasks):
        noise = rng.lognormal(0.0, sigma, pairs) * 200
        for rep in range(pairs):
            pair_id = make_pair_id("run-s", f"t{t}", rep)
            base = 5000 + int(rng.integers(0, 40))
            for arm, total in (("baseline", base), ("optimizer", base - 50 + int(noise[rep]))):
                out.append(
                    EpisodeRecord(
                        episodeId=make_episode_id(pair_id, arm),
                        pairId=pair_id,
                        arm=arm,
                        totalTokens=total,
                        client="sim",
                        clientVersion="1.0",
                        model="sim-model",
                        modelVersion="2025-01",
                        taskId=f"t{t}",
                        runId="run-s",
                        correct=True,
                        joinMethod="exact",
                    )
                )
    return out


def test_an_analysis_of_skewed_cohorts_says_insufficient_and_power_agrees(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = _records(tasks=16, pairs=10, sigma=0.5)
    analysis = analyse_cohorts(records, run_id="run-s", min_pairs=5, n_resamples=2000)
    data = analysis.to_json()
    (skewed,) = [s for s in data["shapeGate"]["skewed"] if s["metric"] == "totalTokens"]
    assert skewed["towards"] == "costs" and skewed["cohorts"] == 16
    total = [e for c in data["cohorts"] for e in c["effects"] if e["metric"] == "totalTokens"]
    assert len(total) == 16
    assert all((e["decision"], e["reason"]) == ("insufficient", "skewed") for e in total)
    # the intervals are still reported; only the decision waits
    assert all(e["decisionLow"] is not None and e["ciLow"] is not None for e in total)
    assert data["decisions"]["insufficient"] >= 16
    text = render_cohort_table(analysis)
    assert "SKEWED" in text and "totalTokens on optimizer vs baseline" in text
    # `pairlab power` on the same episodes: the same pairs needed for the shape
    log = tmp_path / "episodes.jsonl"
    log.write_text("\n".join(r.to_json_line() for r in records) + "\n", encoding="utf-8")
    capsys.readouterr()
    code = cli_exit(
        [
            "power",
            str(log),
            "--effect",
            "400",
            "--contrast",
            "optimizer-vs-baseline",
            "--metric",
            "totalTokens",
            "--json",
            "--replicates",
            "500",
        ]
    )
    payload = json.loads(capsys.readouterr().out)
    assert code == 0
    (shape,) = payload["shape"]
    assert shape["pairsNeeded"] == skewed["pairsNeeded"] and shape["cohorts"] == 16
    if shape["pairsNeeded"] is not None:
        assert payload["preRegister"]["minPairs"] >= shape["pairsNeeded"]


def test_normal_cohorts_are_decided_as_before() -> None:
    records = _records(tasks=8, pairs=10, sigma=0.01)  # nearly constant noise: symmetric-ish
    data = analyse_cohorts(records, run_id="run-s", min_pairs=5, n_resamples=2000).to_json()
    assert data["shapeGate"]["judged"] and data["shapeGate"]["skewed"] == []
    assert not any(e["reason"] == "skewed" for c in data["cohorts"] for e in c["effects"])


def test_a_lone_cohort_is_decided_only_beyond_the_worst_calibrated_shape() -> None:
    """One cohort per contrast's metric: its shape cannot be judged, so the one-cohort rule
    (pairlab.core.stats.one_cohort) tests it as if lognormal sigma 1; what the decision
    test alone would have decided and the rule does not is insufficient (shape-unknown)."""
    plan = StudyPlan(id="p", min_pairs=5, primary_contrasts=["optimizer-vs-baseline"])
    contrasts = [Contrast("optimizer", "baseline")]
    n = 10
    q = float(worst_shape_critical(n, 0.025))
    t = np.array([[[-0.8 * q]], [[-1.2 * q]]])  # [cohort, contrast, metric]

    def labels(cohorts: int, t_stat: np.ndarray) -> Any:
        return label_effects(
            plan,
            contrasts,
            gate=5,
            n=np.full((cohorts, 1, 1), n),
            p_saving=np.full((cohorts, 1, 1), 0.001),  # the decision test: a clear saving
            p_increase=np.full((cohorts, 1, 1), 0.999),
            percentile_high=np.full((cohorts, 1, 1), -1.0),
            correctness_holds=np.ones((cohorts, 1), bool),
            graded=np.ones((cohorts, 1), bool),
            metrics=["totalTokens"],
            skewness=np.zeros((cohorts, 1, 1)),
            t_stat=t_stat,
        )

    for t_stat, word, why in ((t[:1], "insufficient", "shape-unknown"), (t[1:], "primary-win", "")):
        got = labels(1, t_stat)
        assert (DECISIONS[got.decision[0, 0, 0]], REASONS[got.reason[0, 0, 0]]) == (word, why)
    assert labels(1, t[:1]).p_adjusted[0, 0, 0] > 0.05  # the rule's p, not the test's
    # two cohorts: the gate judges the shape (symmetric here) and the test decides both
    both = labels(2, t)
    assert (both.decision == DECISIONS.index("primary-win")).all()
    assert both.p_adjusted[:, 0, 0] == pytest.approx(0.002)
    # worst_shape_p inverts the critical value; no evidence is p 1; no spread keeps its side
    assert worst_shape_p(np.array([q, 0.0, -q, np.inf]), np.full(4, n)) == pytest.approx(
        [0.025, 1.0, 1.0, 0.0]
    )


def test_a_one_task_analysis_and_power_say_what_one_cohort_needs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = _records(tasks=1, pairs=12, sigma=1.0)
    data = analyse_cohorts(records, run_id="run-s", min_pairs=5, n_resamples=2000).to_json()
    (total,) = [e for e in data["cohorts"][0]["effects"] if e["metric"] == "totalTokens"]
    # the test's own p and interval are reported unchanged; the adjusted p is the rule's
    assert total["pAdjusted"] >= total["pValue"]
    log = tmp_path / "episodes.jsonl"
    log.write_text("\n".join(r.to_json_line() for r in records) + "\n", encoding="utf-8")
    capsys.readouterr()
    args = ["power", str(log), "--effect", "400", "--contrast", "optimizer-vs-baseline"]
    code = cli_exit([*args, "--metric", "totalTokens", "--json", "--replicates", "500"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 0
    (row,) = payload["cohorts"]
    assert row["requiredPairsOneCohort"] > row["requiredPairs"]
    assert row["powerAtRequiredOneCohort"] >= 0.8
    assert payload["preRegisterOneCohort"] == row["requiredPairsOneCohort"]
    code = cli_exit([*args, "--metric", "totalTokens", "--replicates", "500"])
    out = capsys.readouterr().out
    assert "one cohort per contrast and metric" in out
    assert f"{row['requiredPairsOneCohort']} pairs" in out
