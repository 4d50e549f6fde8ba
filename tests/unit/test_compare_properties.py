"""Property: no mutation of a valid loom artifact crashes the verdict engine.

Starting from the golden supported artifact, hypothesis deletes fields, changes
types and values, adds keys, truncates or corrupts the bytes, inserts huge
numbers and arbitrary unicode. Whatever it builds, the engine answers with a
verdict whose exit code is 0, 1 or 2, whose reason codes are members of the
enum (sorted, unique), whose JSON form (loom's shape) serializes without
NaN/Infinity, and whose text and ``--explain`` forms render. Files over 16 MiB
are refused from their size, whatever they hold.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pairlab.core.verdict import (
    MAX_ARTIFACT_BYTES,
    Verdict,
    VerdictReason,
    judge_artifact_bytes,
    judge_file,
    render_explanation,
    render_text,
)

BASE: dict[str, Any] = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures" / "compare" / "supported.json").read_text()
)
CODES = {str(code) for code in VerdictReason}
PAIR_KEYS = [
    "work_unit_id",
    "verdict",
    "token_proxy_verdict",
    "subscription_verdict",
    "reason_codes",
    "baseline_provider_tokens",
    "candidate_provider_tokens",
    "quota_comparisons",
]


def paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            found += paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += paths(value, (*prefix, index))
    return found


ALL_PATHS = paths(BASE)
HUGE = st.sampled_from([10**20, -(10**20), 2**63, 10**400, 1e308, -1e308, 1e-320, 10**4000])
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    HUGE,
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=300),
    st.sampled_from(["", ".", "..", "a/b", "x" * 161, "é", "\u202e", "claude", "codex", "passed"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=8,
)


PLAUSIBLE_STRINGS = st.sampled_from(
    [
        "claude",
        "codex",
        "passed",
        "failed",
        "unknown",
        "high",
        "low",
        "critical",
        "same-reset",
        "reset",
        "initial",
        "measured",
        "partial",
        "rev-0a1b2c3",
        "rev-4d5e6f7",
        "wu-001:cold-start",
        "wu-001:cold-start:candidate",
        "five-hour",
        "seven-day",
        "pytest",
        "tests-v3",
        "implementation-revision",
        "model-assignment",
    ]
)


def same_type(value: Any) -> st.SearchStrategy[Any]:
    """A different value of the same JSON type (keeps the artifact mostly valid)."""
    if isinstance(value, bool) or value is None:
        return st.sampled_from([True, False, None])
    if isinstance(value, int):
        return st.integers(0, 100_000)
    if isinstance(value, float):
        return st.floats(0, 100_000, allow_nan=False)
    if isinstance(value, str):
        return PLAUSIBLE_STRINGS
    if isinstance(value, list):
        return st.just(value[:-1])
    return st.just(value)


def at(doc: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        doc = doc[part]
    return doc


@st.composite
def mutation(draw: st.DrawFn, doc: Any) -> Any:
    path = draw(st.sampled_from(paths(doc)))
    kinds = ["delete", "replace", "extra-key", "duplicate-item", "huge", "same-type", "same-type"]
    kind = draw(st.sampled_from(kinds))
    if not path:
        return draw(VALUES) if kind == "replace" else doc
    parent, last = at(doc, path[:-1]), path[-1]
    if kind == "delete":
        del parent[last]
    elif kind == "replace":
        parent[last] = draw(VALUES)
    elif kind == "same-type":
        parent[last] = draw(same_type(parent[last]))
    elif kind == "huge":
        parent[last] = draw(HUGE)
    elif kind == "extra-key" and isinstance(parent, dict):
        parent[draw(st.text(min_size=1, max_size=20))] = draw(VALUES)
    elif kind == "duplicate-item" and isinstance(parent, list):
        parent.append(copy.deepcopy(parent[last]))
    return doc


@st.composite
def mutated_bytes(draw: st.DrawFn) -> bytes:
    doc: Any = copy.deepcopy(BASE)
    for _ in range(draw(st.integers(1, 4))):
        doc = draw(mutation(doc))
    try:
        data = json.dumps(doc, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")
    except (ValueError, OverflowError):
        data = b"{"
    corruption = draw(st.sampled_from(["none", "none", "truncate", "flip", "prefix"]))
    if corruption == "truncate" and data:
        data = data[: draw(st.integers(0, len(data) - 1))]
    elif corruption == "flip" and data:
        index = draw(st.integers(0, len(data) - 1))
        data = data[:index] + bytes([draw(st.integers(0, 255))]) + data[index + 1 :]
    elif corruption == "prefix":
        data = draw(st.binary(max_size=8)) + data
    return data


def assert_well_formed(data: bytes) -> None:
    report = judge_artifact_bytes(data)
    output = report.to_json()
    json.dumps(output, allow_nan=False)
    render_text(report)
    render_explanation(report)
    assert report.exit_code == report.verdict.exit_code
    assert set(output["reason_codes"]) <= CODES
    assert output["reason_codes"] == sorted(set(output["reason_codes"]))
    for pair in output["pairs"]:
        assert list(pair) == PAIR_KEYS
        assert set(pair["reason_codes"]) <= set(output["reason_codes"])
        if "incomparable-pair" in pair["reason_codes"]:
            assert pair["verdict"] != "supported-candidate"
            assert pair["token_proxy_verdict"] == pair["subscription_verdict"] == "inconclusive"
    if not output["pairs"]:  # a whole-artifact failure
        assert report.exit_code == 2 and output["reason_codes"]
        assert output["token_proxy_verdict"] == output["subscription_verdict"] == "inconclusive"
    if report.exit_code == 0:
        assert report.pairs
        assert all(p.verdict is Verdict.SUPPORTED and p.is_comparable for p in report.pairs)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_bytes())
def test_no_mutation_crashes_the_engine(data: bytes) -> None:
    assert_well_formed(data)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=512))
def test_arbitrary_bytes_are_malformed_input_not_a_crash(data: bytes) -> None:
    assert_well_formed(data)


def test_the_unmutated_base_is_supported() -> None:
    assert judge_artifact_bytes(json.dumps(BASE).encode()).exit_code == 0


@settings(max_examples=20, deadline=None)
@given(st.binary(max_size=64), st.integers(1, 4096))
def test_oversized_files_are_refused_before_parsing(
    tmp_path_factory: Any, prefix: bytes, over: int
) -> None:
    big = tmp_path_factory.mktemp("big") / "artifact.json"
    with big.open("wb") as handle:  # sparse: whatever the prefix, the size alone refuses it
        handle.write(prefix)
        handle.truncate(MAX_ARTIFACT_BYTES + over)
    report = judge_file(big)
    assert (report.exit_code, report.reason_codes, report.pairs) == (2, ["input-too-large"], ())
