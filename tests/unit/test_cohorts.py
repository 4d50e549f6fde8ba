"""Cohort analysis rules (DESIGN 7): pairing, nulls, exclusions, gate, win, no pooling."""

from __future__ import annotations

import json
import random
import re
from typing import Any

import polars as pl
import pytest

from pairlab.core.analysis.cohorts import (
    METRICS,
    analyse_cohorts,
    effects_frame,
    episodes_frame,
    render_cohort_table,
    resolve_min_pairs,
)
from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.schemas.episode import (
    EpisodeRecord,
    iter_episode_lines,
    make_episode_id,
    make_pair_id,
)

# Issue 2's keys, then the decision (issue 15): role, label, reason, decision interval, p-values.
EFFECT_KEYS = {
    "treatment",
    "control",
    "metric",
    "estimate",
    "ciLow",
    "ciHigh",
    "n",
    "excludedNull",
    "win",
    "role",
    "decision",
    "reason",
    "decisionLow",
    "decisionHigh",
    "pValue",
    "pAdjusted",
}


def episode(rep: int, arm: str, total: int | None, **extra: Any) -> EpisodeRecord:
    fields: dict[str, Any] = {
        "client": "sim",
        "clientVersion": "1.0",
        "model": "sim-model",
        "modelVersion": "2025-01",
        "taskId": "t1",
        "runId": "run-a",
        "correct": True,
        "joinMethod": "exact",
    }
    fields.update(extra)
    pair_id = make_pair_id(fields["runId"], fields["taskId"], rep)
    return EpisodeRecord(
        episodeId=make_episode_id(pair_id, arm) + str(fields.get("clientVersion")),
        pairId=pair_id,
        arm=arm,
        totalTokens=total,
        **fields,
    )


def cohort_records(
    pairs: int,
    saving: int = 100,
    arms: tuple[str, ...] = ("baseline", "optimizer"),
    *,
    seed: int | None = None,
    **extra: Any,
) -> list[EpisodeRecord]:
    """``pairs`` pairs whose arms differ by ``saving`` tokens plus uniform noise; the same
    ``(pairs, saving)`` gives the same data unless ``seed`` makes the cohorts independent."""
    rng = random.Random(pairs * 7 + saving if seed is None else seed)
    records = []
    for rep in range(pairs):
        base = 1000 + rng.randint(0, 40)
        for i, arm in enumerate(arms):
            latency = round(rng.uniform(1000, 2000), 3)
            fields = {"latencyMs": latency, **extra}
            records.append(episode(rep, arm, base - i * saving + rng.randint(0, 10), **fields))
    return records


def effect(cohort: dict[str, Any], treatment: str, control: str, metric: str) -> dict[str, Any]:
    found = [
        e
        for e in cohort["effects"]
        if (e["treatment"], e["control"], e["metric"]) == (treatment, control, metric)
    ]
    assert len(found) == 1
    return found[0]


def analyse(records: list[EpisodeRecord], min_pairs: int = 5, **kw: Any) -> dict[str, Any]:
    return analyse_cohorts(
        records, run_id="run-a", min_pairs=min_pairs, n_resamples=2000, **kw
    ).to_json()


def test_output_shape_is_issue_2s() -> None:
    out = analyse(cohort_records(6))
    (cohort,) = out["cohorts"]
    assert set(cohort["key"]) == {
        "client",
        "clientVersion",
        "model",
        "modelVersion",
        "taskId",
        "stratum",
        "intervention",
    }
    assert cohort["status"] == "ok" and cohort["pairs"] == 6
    assert {e["metric"] for e in cohort["effects"]} == set(METRICS)
    assert all(set(e) == EFFECT_KEYS for e in cohort["effects"])
    assert set(cohort["correctness"]["baseline"]) == {
        "correct",
        "n",
        "rate",
        "wilsonLow",
        "wilsonHigh",
    }
    (paired,) = cohort["correctness"]["paired"]
    assert set(paired) == {"treatment", "control", "mcnemarP", "diff", "diffLow", "diffHigh"}
    assert cohort["joinCoverage"] == {"exact": 12, "fallback": 0, "missing": 0}
    json.dumps(out, allow_nan=False)  # no NaN leaks into JSON


def test_saving_is_negative_and_a_win() -> None:
    (cohort,) = analyse(cohort_records(8, saving=100))["cohorts"]
    e = effect(cohort, "optimizer", "baseline", "totalTokens")
    assert -110 < e["estimate"] < -90
    assert e["ciLow"] <= e["estimate"] <= e["ciHigh"] < 0
    assert e["n"] == 8 and e["excludedNull"] == 0 and e["win"] is True


def test_an_unobserved_metric_stays_null_and_counts_as_excluded() -> None:
    (cohort,) = analyse(cohort_records(6))["cohorts"]
    e = effect(cohort, "optimizer", "baseline", "outputTokens")
    assert e["estimate"] is None and e["ciLow"] is None and e["ciHigh"] is None
    assert e["n"] == 0 and e["excludedNull"] == 6 and e["win"] is False


def test_a_null_is_excluded_from_its_metric_never_read_as_zero() -> None:
    records = cohort_records(6, saving=0)
    # The optimizer's total of pair 0 was not observed.
    records[1] = episode(0, "optimizer", None)
    (cohort,) = analyse(records)["cohorts"]
    e = effect(cohort, "optimizer", "baseline", "totalTokens")
    assert e["n"] == 5 and e["excludedNull"] == 1
    # Read as 0, the missing total would be a saving of ~1000 tokens in one pair of six.
    assert e["estimate"] > -50
    observed = [
        t.total_tokens - b.total_tokens  # type: ignore[operator]
        for b, t in zip(records[2::2], records[3::2], strict=True)
    ]
    assert e["estimate"] == pytest.approx(sum(observed) / 5)


def test_nulls_below_the_gate_report_an_estimate_but_no_interval() -> None:
    records = cohort_records(6)
    for rep in range(3):
        records[2 * rep + 1] = episode(rep, "optimizer", None)
    (cohort,) = analyse(records)["cohorts"]
    e = effect(cohort, "optimizer", "baseline", "totalTokens")
    assert e["n"] == 3 and e["excludedNull"] == 3
    assert e["estimate"] is not None and e["ciLow"] is None and e["win"] is False


def test_excluded_episodes_are_left_out_and_counted() -> None:
    records = cohort_records(6)
    records[0] = episode(0, "baseline", 1, excluded=True, excludedReason="infra: CLI never started")
    (cohort,) = analyse(records)["cohorts"]
    assert cohort["excluded"] == 1
    assert cohort["pairs"] == 5  # pair 0 lost its baseline: no longer complete
    e = effect(cohort, "optimizer", "baseline", "totalTokens")
    assert e["n"] == 5 and e["excludedNull"] == 0
    assert cohort["correctness"]["baseline"]["n"] == 5


def test_below_the_gate_a_cohort_is_insufficient_and_claims_nothing() -> None:
    (cohort,) = analyse(cohort_records(4, saving=300))["cohorts"]
    assert cohort["status"] == "insufficient" and cohort["pairs"] == 4
    assert cohort["effects"] == [] and cohort["correctness"]["paired"] == []
    assert cohort["correctness"]["optimizer"]["n"] == 4  # descriptive counts still shown
    (cohort,) = analyse(cohort_records(4, saving=300), min_pairs=4)["cohorts"]
    assert cohort["status"] == "ok"


def test_min_pairs_gate_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOKEN_OPTIMIZER_EVAL_MIN_PAIRS", raising=False)
    assert resolve_min_pairs(None) == 5
    assert resolve_min_pairs(8) == 8
    monkeypatch.setenv("TOKEN_OPTIMIZER_EVAL_MIN_PAIRS", "12")
    assert resolve_min_pairs(None) == 12
    assert resolve_min_pairs(3) == 3  # the explicit value wins
    for bad in ("1", "0", "-4", "five"):
        monkeypatch.setenv("TOKEN_OPTIMIZER_EVAL_MIN_PAIRS", bad)
        with pytest.raises(InvalidInputError) as info:
            resolve_min_pairs(None)
        assert info.value.reason == ReasonCode.INVALID_MIN_PAIRS
    with pytest.raises(InvalidInputError) as info:
        resolve_min_pairs(1)
    assert info.value.reason == ReasonCode.INVALID_MIN_PAIRS
    with pytest.raises(InvalidInputError) as info:
        analyse_cohorts(cohort_records(6), run_id="r", min_pairs=1)
    assert info.value.reason == ReasonCode.INVALID_MIN_PAIRS


def test_a_correctness_regression_blocks_the_win() -> None:
    records = []
    for rep in range(8):
        records.append(episode(rep, "baseline", 1000 + rep, correct=True))
        records.append(episode(rep, "optimizer", 800 + rep, correct=rep % 2 == 0))
    (cohort,) = analyse(records)["cohorts"]
    e = effect(cohort, "optimizer", "baseline", "totalTokens")
    assert e["ciHigh"] < 0 and e["win"] is False
    (paired,) = cohort["correctness"]["paired"]
    assert paired["diff"] == pytest.approx(-0.5)
    assert paired["mcnemarP"] == pytest.approx(0.125)  # 0 vs 4 discordant: 2 * (1/2)**4
    assert cohort["correctness"]["optimizer"]["rate"] == pytest.approx(0.5)


def test_ungraded_pairs_cannot_prove_non_regression() -> None:
    records = cohort_records(8, correct=None)
    (cohort,) = analyse(records)["cohorts"]
    e = effect(cohort, "optimizer", "baseline", "totalTokens")
    assert e["ciHigh"] < 0 and e["win"] is False
    assert cohort["correctness"]["baseline"] == {
        "correct": 0,
        "n": 0,
        "rate": None,
        "wilsonLow": None,
        "wilsonHigh": None,
    }


def test_cohorts_are_never_pooled() -> None:
    records = cohort_records(6, clientVersion="1.0") + cohort_records(6, clientVersion="2.0")
    out = analyse(records)
    assert [c["key"]["clientVersion"] for c in out["cohorts"]] == ["1.0", "2.0"]
    assert all(c["pairs"] == 6 for c in out["cohorts"])


def test_missing_versions_form_a_flagged_unknown_cohort() -> None:
    records = cohort_records(6, clientVersion=None, modelVersion=None) + cohort_records(6)
    out = analyse(records)
    unknown = [c for c in out["cohorts"] if c["key"]["clientVersion"] == "unknown"]
    assert len(unknown) == 1 and unknown[0]["pairs"] == 6
    assert {"clientVersion unknown", "modelVersion unknown"} <= set(unknown[0]["flags"])
    assert unknown[0]["key"]["stratum"] == "default"


def test_contrasts_cover_baseline_and_the_ladder_for_present_arms_only() -> None:
    arms = ("baseline", "optimizer", "retrieval", "full")
    (cohort,) = analyse(cohort_records(6, arms=arms))["cohorts"]
    contrasts = {(e["treatment"], e["control"]) for e in cohort["effects"]}
    assert contrasts == {
        ("optimizer", "baseline"),
        ("retrieval", "baseline"),
        ("full", "baseline"),
        ("retrieval", "optimizer"),
        ("full", "retrieval"),
    }
    (cohort,) = analyse(cohort_records(6, arms=("baseline", "retrieval", "full")))["cohorts"]
    contrasts = {(e["treatment"], e["control"]) for e in cohort["effects"]}
    assert contrasts == {("retrieval", "baseline"), ("full", "baseline"), ("full", "retrieval")}


def test_join_coverage_counts_exact_fallback_and_missing() -> None:
    records = cohort_records(6)
    records[0] = episode(0, "baseline", 1000, joinMethod="fallback")
    records[1] = episode(0, "optimizer", 900, joinMethod=None)
    (cohort,) = analyse(records)["cohorts"]
    assert cohort["joinCoverage"] == {"exact": 10, "fallback": 1, "missing": 1}


def test_a_duplicated_arm_in_a_pair_is_an_error_not_a_silent_pick() -> None:
    records = cohort_records(6)
    records.append(records[0])
    with pytest.raises(InvalidInputError, match="each arm runs once per pair"):
        analyse(records)


def lines_of(records: list[EpisodeRecord]) -> list[str]:
    return [r.to_json_line() for r in records]


def test_results_do_not_depend_on_line_order_or_number_spelling() -> None:
    records = cohort_records(7, arms=("baseline", "optimizer", "full")) + cohort_records(
        6, clientVersion="2.0"
    )
    for r in range(len(records)):  # whole latencies, so that they can be spelled 1234 or 1234.0
        fields = records[r].model_dump(by_alias=True)
        fields["latencyMs"] = float(round(fields["latencyMs"]))
        records[r] = EpisodeRecord.model_validate(fields)
    lines = lines_of(records)
    assert '.0,"costUsd"' in lines[0]
    shuffled = lines[:]
    random.Random(3).shuffle(shuffled)
    respelled = [line.replace('.0,"costUsd"', ',"costUsd"') for line in shuffled]
    assert '.0,"costUsd"' not in respelled[0]

    def run(source: list[str]) -> dict[str, Any]:
        return analyse(list(iter_episode_lines(iter(source))))

    first = run(lines)
    assert effect(first["cohorts"][0], "full", "baseline", "latencyMs")["ciLow"] is not None
    assert run(shuffled) == first
    assert run(respelled) == first
    assert run(lines) == first  # and across runs


def test_integer_and_float_frame_columns_give_identical_results() -> None:
    frame = episodes_frame(cohort_records(7))
    as_ints = frame.with_columns(pl.col("totalTokens").cast(pl.Int64))
    a = analyse_cohorts(frame, run_id="r", min_pairs=5, n_resamples=1000).to_json()
    b = analyse_cohorts(as_ints, run_id="r", min_pairs=5, n_resamples=1000).to_json()
    assert a == b


def test_a_cohort_is_unaffected_by_other_cohorts_in_the_file() -> None:
    """Estimates, intervals, p-values and (here) decisions are the cohort's own; the
    family-adjusted p of a contrast's only cohort is the one-cohort rule's (its shape cannot
    be judged), so it is compared apart: never smaller alone than with a second cohort."""
    alone = analyse(cohort_records(6))["cohorts"]
    together = analyse(cohort_records(6) + cohort_records(9, clientVersion="0.9"))["cohorts"]
    mine = [c for c in together if c["key"]["clientVersion"] == "1.0"]

    def adjusted(cohorts: list[dict[str, Any]]) -> list[float | None]:
        return [e.pop("pAdjusted") for c in cohorts for e in c["effects"]]

    p_alone, p_together = adjusted(alone), adjusted(mine)
    assert mine == alone
    assert all(
        (a is None) == (b is None) and (a is None or b is None or a >= b)
        for a, b in zip(p_alone, p_together, strict=True)
    )
    assert any(
        a is not None and b is not None and a > b for a, b in zip(p_alone, p_together, strict=True)
    )


def test_another_run_id_draws_other_resamples() -> None:
    records = cohort_records(8)
    a = analyse_cohorts(records, run_id="run-a", min_pairs=5, n_resamples=2000).to_json()
    b = analyse_cohorts(records, run_id="run-b", min_pairs=5, n_resamples=2000).to_json()
    ea = effect(a["cohorts"][0], "optimizer", "baseline", "latencyMs")
    eb = effect(b["cohorts"][0], "optimizer", "baseline", "latencyMs")
    assert ea["estimate"] == eb["estimate"] and ea["ciLow"] != eb["ciLow"]


def test_bca_option_and_its_degenerate_case_is_flagged() -> None:
    records = []
    for rep in range(6):
        records.append(episode(rep, "baseline", 1000, toolCalls=3))
        records.append(episode(rep, "optimizer", 900 - rep, toolCalls=3))
    (cohort,) = analyse(records, method="bca")["cohorts"]
    calls = effect(cohort, "optimizer", "baseline", "toolCalls")
    assert (calls["estimate"], calls["ciLow"], calls["ciHigh"]) == (0.0, 0.0, 0.0)
    assert any("toolCalls" in f and "degenerate" in f for f in cohort["flags"])
    total = effect(cohort, "optimizer", "baseline", "totalTokens")
    assert total["ciLow"] < total["estimate"] < total["ciHigh"] < 0


def test_effects_frame_and_table() -> None:
    records = cohort_records(6) + cohort_records(3, clientVersion="2.0")
    analysis = analyse_cohorts(records, run_id="run-a", min_pairs=5, n_resamples=1000)
    frame = effects_frame(analysis.to_json())
    assert frame.height == len(METRICS)  # the insufficient cohort has no effect rows
    row = frame.filter(pl.col("metric") == "outputTokens").row(0, named=True)
    assert row["estimate"] is None and row["excludedNull"] == 6
    data = analysis.to_json()
    ok = data["cohorts"][0]
    total = effect(ok, "optimizer", "baseline", "totalTokens")
    got = frame.filter(pl.col("metric") == "totalTokens").row(0, named=True)
    assert (got["estimate"], got["ciLow"], got["ciHigh"]) == (
        total["estimate"],
        total["ciLow"],
        total["ciHigh"],
    )
    assert set(frame["status"]) == {"ok"} and set(frame["pairs"]) == {6}
    table = render_cohort_table(analysis)
    assert (
        "| sim 1.0 / sim-model 2025-01 / t1 / default | ok | 6 | optimizer vs baseline | totalTokens |"
        in table
    )
    assert "insufficient | 3 |" in table and "no claim" in table


def test_episodes_frame_keeps_nulls() -> None:
    frame = episodes_frame([episode(0, "baseline", None, latencyMs=12.5)])
    row = frame.row(0, named=True)
    assert row["totalTokens"] is None and row["latencyMs"] == 12.5 and row["outputTokens"] is None


def test_a_metric_with_nulls_resamples_only_its_own_pairs_from_its_own_seed() -> None:
    import numpy as np

    from pairlab.core.stats.bootstrap import bootstrap_mean_intervals
    from pairlab.core.stats.seeds import make_rng

    records = cohort_records(7)
    records[3] = episode(1, "optimizer", None, latencyMs=records[3].latency_ms)
    analysis = analyse_cohorts(records, run_id="run-a", min_pairs=5, n_resamples=3000)
    e = effect(analysis.to_json()["cohorts"][0], "optimizer", "baseline", "totalTokens")
    kept = [r for r in range(7) if r != 1]
    diffs = np.array(
        [records[2 * r + 1].total_tokens - records[2 * r].total_tokens for r in kept],  # type: ignore[operator]
        dtype=float,
    )
    key = ("sim", "1.0", "sim-model", "2025-01", "t1", "default")
    pair_ids = sorted(make_pair_id("run-a", "t1", r) for r in kept)
    expected = bootstrap_mean_intervals(
        diffs, make_rng("run-a", key, "pairs", pair_ids), n_resamples=3000
    )
    assert e["n"] == 6
    assert (e["ciLow"], e["ciHigh"]) == (float(expected.low[0]), float(expected.high[0]))


def test_worker_processes_give_exactly_the_threaded_results(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import pairlab.core.analysis.engine_pool as engine

    records = [
        r
        for task in ("t1", "t2", "t3")
        for r in cohort_records(8, saving=50, arms=("baseline", "optimizer", "full"), taskId=task)
    ]
    threaded = analyse(records, workers=2)
    monkeypatch.setattr(engine, "PROCESS_POOL_MIN_COHORTS", 2)
    in_processes = analyse(records, workers=2)
    assert in_processes == threaded
    assert len(threaded["cohorts"]) == 3 and all(c["status"] == "ok" for c in threaded["cohorts"])


def test_list_price_is_a_paired_money_effect_and_null_stays_null() -> None:
    # $3 / MTok on every token: the optimizer's ~100 fewer tokens per pair is $0.0003.
    records = []
    for r in cohort_records(8):
        fields = r.model_dump(by_alias=True)
        fields["apiListPriceUsd"] = fields["totalTokens"] * 3e-6
        records.append(EpisodeRecord.model_validate(fields))
    (cohort,) = analyse(records)["cohorts"]
    price = effect(cohort, "optimizer", "baseline", "apiListPriceUsd")
    tokens = effect(cohort, "optimizer", "baseline", "totalTokens")
    assert price["n"] == 8 and price["excludedNull"] == 0
    assert price["estimate"] == pytest.approx(tokens["estimate"] * 3e-6)
    assert price["ciHigh"] < 0 and price["win"] is True
    # Not priced (no list price on the records): no effect value, never a zero saving.
    (unpriced,) = analyse(cohort_records(8))["cohorts"]
    none = effect(unpriced, "optimizer", "baseline", "apiListPriceUsd")
    assert none["estimate"] is None and none["n"] == 0 and none["excludedNull"] == 8
    assert none["win"] is False


def test_report_prints_dollar_effects_with_enough_decimals() -> None:
    from pairlab.core.report.markdown import render_report_markdown

    records = []
    for r in cohort_records(6):
        fields = r.model_dump(by_alias=True)
        fields["apiListPriceUsd"] = fields["totalTokens"] * 3e-6
        records.append(EpisodeRecord.model_validate(fields))
    text = render_report_markdown({"run_id": "run-a"}, analyse(records))
    (row,) = [line for line in text.splitlines() if line.startswith("| apiListPriceUsd |")]
    cell = row.split("|")[2]  # | metric | optimizer vs baseline |: "est [low, high] ..."
    estimate, bounds = cell.strip().split(" ", 1)
    assert float(estimate) != 0.0 and abs(float(estimate)) < 0.01  # -0.0003, not "-0.0"
    high = float(bounds.split("]")[0].split(",")[-1])
    assert high != 0.0 and abs(high) < 0.01  # the interval too
    (tokens_row,) = [line for line in text.splitlines() if line.startswith("| **totalTokens** |")]
    assert re.fullmatch(r"-?[\d,]+\.\d", tokens_row.split("|")[2].split()[0])  # tokens: 1 decimal
