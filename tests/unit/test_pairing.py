"""Episodes to pairs (pairing.py): the pair frame's row order, nulls, duplicates, and the
integer pairing's exactness when two (key, pairId)s share a hash."""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pairlab.core.analysis import pairing
from pairlab.core.analysis.pairing import prepare_pairs
from pairlab.core.errors import InvalidInputError


def frame(rows: list[tuple[str | None, str | None, str | None, float | None]]) -> pl.DataFrame:
    """(taskId, pairId, arm, totalTokens) episodes of one client, model and version."""
    task, pair, arm, total = zip(*rows, strict=True)
    return pl.DataFrame(
        {
            "client": "sim",
            "clientVersion": "1.0",
            "model": "m",
            "modelVersion": "2025-01",
            "taskId": list(task),
            "pairId": list(pair),
            "arm": list(arm),
            "totalTokens": list(total),
            "correct": True,
            "joinMethod": "exact",
        },
        schema_overrides={"totalTokens": pl.Float64},
    )


MESSY = frame(
    [
        ("t2", "p1", "optimizer", 90.0),
        ("t2", "p1", "baseline", 100.0),
        ("t1", "p2", "baseline", 110.0),
        ("t1", "p2", "optimizer", None),
        ("t1", "p1", "baseline", 120.0),  # optimizer missing
        ("t1", None, "baseline", 130.0),  # a null pair: never paired
        ("t1", None, "optimizer", 80.0),
        (None, "p3", "baseline", 140.0),  # a null key: never paired
        (None, "p3", "optimizer", 70.0),
        ("t2", "p2", None, 60.0),  # a null arm: never present
        ("t2", "p2", "baseline", 100.0),
        ("t2", "p2", "optimizer", 50.0),
    ]
)


def test_pairs_are_sorted_by_key_then_pair_and_nulls_never_pair() -> None:
    wide, _summary, arms, _contrasts = prepare_pairs(MESSY)
    assert arms == ["baseline", "optimizer", None]
    got = wide.select(
        "taskId",
        "pairId",
        "present@baseline",
        "present@optimizer",
        "present@None",
        "optimizer-baseline:totalTokens",
        "complete",
        "cohort",
    ).rows()
    assert got == [
        (None, "p3", False, False, False, None, False, 0),
        ("t1", None, False, False, False, None, False, 1),
        ("t1", "p1", True, False, False, None, False, 1),
        ("t1", "p2", True, True, False, None, True, 1),
        ("t2", "p1", True, True, False, -10.0, True, 2),
        ("t2", "p2", True, True, False, -50.0, True, 2),
    ]


def test_shared_hashes_fall_back_to_ranks_with_the_same_frame(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    expected = prepare_pairs(MESSY)
    monkeypatch.setattr(
        pairing, "_pair_hash", lambda key: pl.struct(*key, "pairId").hash() % 2
    )  # six (key, pairId)s, two hashes
    got = prepare_pairs(MESSY)
    assert_frame_equal(got[0], expected[0], check_exact=True)
    assert_frame_equal(got[1], expected[1], check_exact=True)
    assert got[2:] == expected[2:]


def test_an_arm_twice_names_the_first_duplicate() -> None:
    twice = pl.concat([MESSY, MESSY.slice(1, 1), MESSY.slice(0, 1), MESSY.slice(5, 1)])
    with pytest.raises(InvalidInputError, match=r"pair None has 2 episodes for arm 'baseline'"):
        prepare_pairs(twice)
    twice = pl.concat([MESSY, MESSY.slice(1, 1), MESSY.slice(0, 1)])
    with pytest.raises(InvalidInputError, match=r"pair 'p1' has 2 episodes for arm 'baseline'"):
        prepare_pairs(twice)
