"""Issue 15 item 4: the compiled resampling loops give the NumPy reference's numbers bit
for bit, and a whole analysis through them is byte-identical JSON.

The reference is the NumPy path (``compiled=False``, or ``PAIRLAB_NUMPY_KERNELS=1``
for a whole analysis): the code the analysis ran before the compiled loops existed.
Inputs are varied on purpose: ties (small integers), columns without spread, nulls
(a metric resampling only its own pairs), tiny cohorts (2 and 3 pairs), signed and
huge values, cohort sizes from 2 to 40 pairs, cohorts lacking an arm.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import polars as pl
import pytest

import pairlab.core.analysis.engine_pool as engine
from pairlab.core.analysis.cohorts import FRAME_SCHEMA, METRICS, analyse_cohorts, effects_frame
from pairlab.core.stats import kernels
from pairlab.core.stats.batch import IntervalBatch
from pairlab.core.stats.bootstrap import bootstrap_mean_intervals, draw_resample_counts
from pairlab.core.stats.seeds import make_rng
from pairlab.core.stats.studentized import column_stats, studentized_sums


def _columns(rng: np.random.Generator, n: int) -> np.ndarray:
    """(n, 8) columns: continuous, skewed, ties, no spread, one outlier, huge, signed zeroes."""
    cols = [
        rng.normal(-100.0, 50.0, n),
        rng.lognormal(3.0, 2.0, n) * rng.choice([-1.0, 1.0], n),
        rng.integers(-2, 3, n).astype(float),  # many ties
        np.full(n, 7.0),  # no spread at all
        np.r_[np.zeros(n - 1), 1e6],  # one pair moved
        rng.normal(0.0, 1.0, n) * 1e12,
        np.r_[np.full(n - 1, -0.0), 0.0],
        rng.integers(0, 2, n) * 0.1,
    ]
    return np.stack(cols, axis=1)


def _same(a: Any, b: Any) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("n", [2, 3, 5, 7, 10, 25, 97, 1000, 65535])
def test_compiled_draws_are_numpys_draws_and_counts(n: int) -> None:
    """PCG64 + NumPy's bounded 16-bit draws re-done in the compiled loop: the same counts
    (rejections included: 65535 rejects often) and the generator left in the same state."""
    resamples = 10_000 if n < 1000 else 41
    ref_rng, rng = make_rng("k", ("c",), str(n)), make_rng("k", ("c",), str(n))
    ref_rng.random()  # an odd number of 32-bit halves used: a stored half is pending
    rng.random()
    reference = draw_resample_counts(ref_rng, n, resamples).copy()
    compiled = draw_resample_counts(rng, n, resamples, compiled=True)
    assert _same(compiled, reference)
    assert (reference.sum(axis=1) == n).all()  # each resample draws n pairs
    assert rng.bit_generator.state == ref_rng.bit_generator.state
    assert rng.integers(0, 2**62) == ref_rng.integers(0, 2**62)


def test_compiled_counts_of_another_generator_count_its_draws() -> None:
    def philox() -> np.random.Generator:
        return np.random.Generator(np.random.Philox(5))

    reference = draw_resample_counts(philox(), 12, 3_000).copy()
    assert _same(draw_resample_counts(philox(), 12, 3_000, compiled=True), reference)


@pytest.mark.parametrize("n", [2, 3, 8, 10, 25, 60])
def test_compiled_studentized_sums_match_bit_for_bit(n: int) -> None:
    data = _columns(np.random.default_rng(n), n)
    described = column_stats(data)
    centered = (data - described.estimate).astype(np.float32)
    # 10,007 resamples: the last block is a shorter one
    counts = draw_resample_counts(make_rng("k", ("s",), str(n)), n, 10_007).copy()
    reference = studentized_sums(centered, counts, described.t_obs)
    ref = [reference.s1.copy(), reference.tstar.copy(), reference.at_most, reference.at_least]
    got = studentized_sums(centered, counts, described.t_obs, compiled=True)
    for mine, theirs in zip((got.s1, got.tstar, got.at_most, got.at_least), ref, strict=True):
        assert _same(mine, theirs)
    assert np.isfinite(ref[0]).all() and (np.abs(ref[1]) > 1e9).any()  # spread-less resamples


@pytest.mark.parametrize("n", [2, 3, 6, 10, 31])
def test_compiled_intervals_match_bit_for_bit(n: int) -> None:
    data = _columns(np.random.default_rng(100 + n), n)
    runs = [
        bootstrap_mean_intervals(
            data, make_rng("k", ("i",), str(n)), decision_confidence=0.95, compiled=compiled
        )
        for compiled in (False, True)
    ]
    (ref, got) = runs
    assert ref.decision is not None and got.decision is not None
    for name in ("estimate", "low", "high", "degenerate", "bca_fallback"):
        assert _same(getattr(got, name), getattr(ref, name)), name
    for name in ("low", "high", "p_saving", "p_increase"):
        assert _same(getattr(got.decision, name), getattr(ref.decision, name)), name


def test_a_batch_finishes_each_set_as_alone() -> None:
    """Sets of 2-31 pairs and 1-8 columns in one batch (flushed when full): every number
    is the one-set path's, bit for bit."""
    batch: IntervalBatch[int] = IntervalBatch(
        n_resamples=3_000, confidence=0.95, decision_confidence=0.975, capacity=20
    )
    sets = []
    for i, n in enumerate([2, 3, 6, 10, 31, 4, 10, 2]):
        data = _columns(np.random.default_rng(200 + i), n)[:, : 1 + i % 8]
        sets.append((data, f"set-{i}"))
    got: dict[int, Any] = {}
    for i, (data, name) in enumerate(sets):
        if not batch.fits(data.shape[1]):
            got.update(batch.finish())
        batch.add(data, make_rng("b", (name,)), i)
    got.update(batch.finish())
    assert batch.finish() == []
    for i, (data, name) in enumerate(sets):
        ref = bootstrap_mean_intervals(
            data,
            make_rng("b", (name,)),
            n_resamples=3_000,
            decision_confidence=0.975,
        )
        mine = got[i]
        assert ref.decision is not None and mine.decision is not None
        for field in ("estimate", "low", "high", "degenerate", "bca_fallback"):
            assert _same(getattr(mine, field), getattr(ref, field)), (i, field)
        for field in ("low", "high", "p_saving", "p_increase"):
            assert _same(getattr(mine.decision, field), getattr(ref.decision, field)), (i, field)


ARMS = ("baseline", "optimizer", "retrieval", "full")


def varied_frame(seed: int = 11) -> pl.DataFrame:
    """Cohorts of 2-40 pairs; some lack an arm; nulls, ties, constants, an exclusion."""
    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = []
    for c in range(36):
        pairs = [2, 3, 4, 5, 6, 10, 17, 40][c % 8]
        arms = ARMS if c % 5 else ARMS[:2]  # every 5th cohort: baseline and optimizer only
        level = rng.lognormal(8.0, 1.0)
        for p in range(pairs):
            for a, arm in enumerate(arms):
                values = {m: float(np.round(level * rng.lognormal(0.0, 0.3))) for m in METRICS}
                values["toolCalls"] = float(rng.integers(0, 3))  # ties
                values["cacheWrite5mTokens"] = 10.0 * a  # no spread within a contrast
                values["cacheWriteTokens"] = None  # never reported
                values["costUsd"] = float(rng.normal(0.0, 1.0)) * 1e9
                for m in ("latencyMs", "reasoningTokens", "apiListPriceUsd"):
                    if rng.random() < 0.12:  # a null: that metric resamples its own pairs
                        values[m] = None
                rows.append(
                    {
                        "episodeId": f"e{c}-{p}-{arm}",
                        "runId": "kern",
                        "pairId": f"kern:t{c}:{p}",
                        "arm": arm,
                        "client": ("claude", "codex", "sim")[c % 3],
                        "clientVersion": "1.0",
                        "model": f"m{c % 4}",
                        "modelVersion": "2025-01",
                        "taskId": f"t{c}",
                        "stratum": None,
                        "excludedReason": None,
                        "joinMethod": "exact",
                        "excluded": c == 7 and p == 0 and arm == "full",
                        "correct": bool(rng.random() < 0.8),
                        **values,
                    }
                )
    frame = pl.DataFrame(rows)
    return frame.with_columns(
        [pl.lit(None, dtype=t).alias(k) for k, t in FRAME_SCHEMA.items() if k not in frame.columns]
    ).select([pl.col(k).cast(t) for k, t in FRAME_SCHEMA.items()])


def _analysis_bytes(frame: pl.DataFrame, **kw: Any) -> tuple[bytes, str]:
    analysis = analyse_cohorts(frame, run_id="kern", n_resamples=2_000, **kw)
    payload = analysis.to_json()
    effects = effects_frame(payload)
    assert effects["ciLow"].is_not_null().sum() > 0
    return json.dumps(payload, sort_keys=True).encode(), analysis.engine


@pytest.mark.parametrize("min_pairs", [2, 5])
def test_an_analysis_through_the_compiled_loops_is_byte_identical(
    monkeypatch: pytest.MonkeyPatch, min_pairs: int
) -> None:
    frame = varied_frame()
    monkeypatch.setenv(kernels.ENV_NUMPY, "1")
    monkeypatch.setattr(engine, "COMPILED_MIN_COHORTS", 1)
    reference, how = _analysis_bytes(frame, min_pairs=min_pairs, workers=2)
    assert how == "threads"
    monkeypatch.setattr(engine, "PROCESS_POOL_MIN_COHORTS", 1)
    in_processes, how_p = _analysis_bytes(frame, min_pairs=min_pairs, workers=2)
    assert how_p == "processes" and in_processes == reference
    monkeypatch.delenv(kernels.ENV_NUMPY)
    compiled, how_c = _analysis_bytes(frame, min_pairs=min_pairs, workers=2)
    assert how_c == "compiled processes" and compiled == reference
    monkeypatch.setattr(engine, "PROCESS_POOL_MIN_COHORTS", 10**9)
    monkeypatch.setattr(engine, "CHUNK_COHORTS", 5)  # several chunks: threads take them
    for workers, expected in ((2, "compiled threads"), (1, "compiled")):
        compiled, how_c = _analysis_bytes(frame, min_pairs=min_pairs, workers=workers)
        assert how_c == expected
        assert compiled == reference
    # the frame really holds what this test is about
    payload = json.loads(reference)
    effects = [e for c in payload["cohorts"] for e in c["effects"]]
    assert any(e["excludedNull"] > 0 and e["ciLow"] is not None for e in effects)
    assert any(e["ciLow"] is not None and e["ciLow"] == e["ciHigh"] for e in effects)
    assert {c["pairs"] for c in payload["cohorts"] if c["status"] == "ok"} >= {5, 40}
    if min_pairs == 2:
        assert any(c["pairs"] == 2 and c["status"] == "ok" for c in payload["cohorts"])


def test_worker_processes_resample_exactly_as_this_process_and_a_failed_one_loses_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every chunk through the worker processes (this process takes none), then through
    workers that cannot start (every chunk handed back and resampled here): the same
    bytes as one thread."""
    frame = varied_frame()
    monkeypatch.setattr(engine, "COMPILED_MIN_COHORTS", 1)
    monkeypatch.setattr(engine, "PROCESS_POOL_MIN_COHORTS", 10**9)
    reference, how = _analysis_bytes(frame, min_pairs=2, workers=1)
    assert how == "compiled"
    monkeypatch.setattr(engine, "PROCESS_POOL_MIN_COHORTS", 1)
    monkeypatch.setattr(engine, "CHUNK_COHORTS", 5)
    monkeypatch.setattr(engine, "SHARE_HERE", False)
    here: list[int] = []  # the cohorts resampled in this process
    original = engine.CohortBootstrap.run_batched

    def counted(self: engine.CohortBootstrap, jobs: list[engine.Job]) -> None:
        here.extend(job[0] for job in jobs)
        original(self, jobs)

    monkeypatch.setattr(engine.CohortBootstrap, "run_batched", counted)
    in_workers, how_w = _analysis_bytes(frame, min_pairs=2, workers=3)
    assert how_w == "compiled processes" and in_workers == reference
    assert here == []  # every chunk was resampled by a worker
    monkeypatch.setattr(engine, "WORKER_MODULE", "pairlab.no_such_worker")
    handed_back, how_f = _analysis_bytes(frame, min_pairs=2, workers=3)
    assert how_f == "compiled processes (2 failed: their chunks resampled here)"
    assert handed_back == reference
    assert len(here) == len(set(here)) > 5  # every chunk came back here, each cohort once


def test_small_analyses_stay_on_the_numpy_path() -> None:
    frame = varied_frame().filter(pl.col("taskId").is_in(["t1", "t2"]))
    _, how = _analysis_bytes(frame, min_pairs=2, workers=1)
    assert how == "serial"  # below COMPILED_MIN_COHORTS: no compiler start-up


def test_the_warm_up_loads_the_signatures_the_analysis_uses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The background warm-up (started for large frames) must load exactly the loops the
    analysis then calls: a second signature would be a second compilation, mid-analysis."""
    kernels.warm_up_in_background().join()
    loaded = {name: list(loop.signatures) for name, loop in kernels._COMPILED.items()}
    assert set(loaded) == {"draw", "counts", "studentize"}
    monkeypatch.setattr(engine, "COMPILED_MIN_COHORTS", 1)
    monkeypatch.setattr(engine, "CHUNK_COHORTS", 5)
    _, how = _analysis_bytes(varied_frame(), min_pairs=5, workers=2)
    assert how == "compiled threads"
    assert {name: list(loop.signatures) for name, loop in kernels._COMPILED.items()} == loaded
