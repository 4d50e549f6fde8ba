"""`json_with_fragments`: `pairlab aggregate --json`'s pre-encoded effects are the bytes
orjson writes for `CohortAnalysis.to_json()`'s dicts, compact and indented."""

from __future__ import annotations

import numpy as np
import orjson
import pytest

from pairlab.core.analysis.cohorts import analyse_cohorts
from pairlab.core.analysis.result_fragments import json_with_fragments
from pairlab.core.json_rows import coded, object_groups, tokens
from tests.unit.test_cohorts import cohort_records, episode


def _mixed_records() -> list:
    """Cohorts that exercise the edges: a gated and an insufficient cohort, an arm
    missing, null metrics, unknown versions (flags), a degenerate (zero-width) metric,
    ungraded pairs, and a contrast's metric tested in one cohort only."""
    records = cohort_records(8, arms=("baseline", "optimizer", "retrieval"))
    records += cohort_records(3, taskId="t2")  # below the gate: insufficient
    records += cohort_records(6, clientVersion=None, modelVersion=None, taskId="t3")
    records += cohort_records(6, taskId="t4", correct=None, costUsd=None)
    for rep in range(6):
        records.append(episode(rep, "baseline", 1000, toolCalls=3, taskId="t5"))
        records.append(episode(rep, "optimizer", 900 - rep, toolCalls=3, taskId="t5"))
    return records


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_fragments_write_the_bytes_of_the_dicts(method: str) -> None:
    analysis = analyse_cohorts(
        _mixed_records(), run_id="run-a", min_pairs=5, n_resamples=500, method=method
    )
    data = analysis.to_json()
    assert {c["status"] for c in data["cohorts"]} == {"ok", "insufficient"}
    for pretty in (False, True):
        option = orjson.OPT_INDENT_2 if pretty else 0
        expected = orjson.dumps(data, option=option)
        assert orjson.dumps(json_with_fragments(analysis, pretty=pretty), option=option) == (
            expected
        )


def test_tokens_spell_each_value_as_orjson_spells_it_in_python() -> None:
    floats = np.array(
        [0.0, -0.0, np.nan, np.inf, -np.inf, 1e-5, 1e16, 1e22, 5e-324, 0.1, 2.0**63, -1.5]
    )
    ints = np.array([0, -1, 2**62, -(2**63)], dtype=np.int64)
    for values in (
        floats,
        floats.astype(np.float32),
        ints,
        ints.astype(np.int8),
        np.array([True, False]),
    ):
        python = [
            None if isinstance(v, float) and not np.isfinite(v) else v for v in values.tolist()
        ]
        assert tokens(values) == [orjson.dumps(v) for v in python]
    assert tokens(np.array([])) == []


def test_object_groups_match_orjson_for_empty_and_coded_groups() -> None:
    rows = [{"a": 1, "b": "x"}, {"a": 2, "b": None}, {"a": 3, "b": "x"}]
    columns = [tokens(np.array([1, 2, 3])), coded(["x", None], np.array([0, 1, 0]))]
    for pretty, option in ((False, 0), (True, orjson.OPT_INDENT_2)):
        groups = object_groups(["a", "b"], columns, np.array([0, 2, 1]), depth=3, pretty=pretty)
        payload = {"g": [[], rows[:2], rows[2:]]}
        as_fragments = {"g": [orjson.Fragment(g) for g in groups]}
        assert orjson.dumps(as_fragments, option=option) == orjson.dumps(payload, option=option)
