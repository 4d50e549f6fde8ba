"""``pairlab aggregate --json`` without the 550,000 effect dicts (issue 28).

:func:`json_with_fragments` is :meth:`CohortAnalysis.to_json` with each cohort's
``effects`` and ``correctness`` already encoded (:class:`orjson.Fragment`, built by
:mod:`pairlab.core.json_rows` from the result's arrays): ``orjson.dumps`` of it writes
the same bytes as of ``to_json()``, compact or (``pretty``) with ``OPT_INDENT_2``, and
takes ~0.3 s of CPU at 10,000 cohorts where the dicts took ~3 s. Only an encoder that
writes fragments verbatim (orjson) can use it: everything else (report.json, the
table, ``effects.parquet``) reads ``to_json()``.

:func:`json_parts` is the same document as its head (every key before ``"cohorts"``, the
last key) and the cohorts, each built as it is taken (what the whole-array encoding of
the effects leaves per cohort is a small dict): the compact output is streamed from them
(:mod:`pairlab.cli.json_stream`), the cohorts encoded in blocks while earlier blocks are
written.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

import numpy as np
import orjson

from pairlab.core.analysis.decisions import DECISIONS, REASONS, ROLES
from pairlab.core.analysis.metrics import METRICS
from pairlab.core.analysis.result import EFFECT_FIELDS, CohortAnalysis
from pairlab.core.json_rows import Coded, coded, key, newline, object_groups, tokens

# pretty depths (the document 0, its cohorts 2): an effect, an arm's correctness 4, a pair 5
_EFFECT: Final = 4
_ARM: Final = 4
_PAIR: Final = 5
PAIRED_FIELDS: Final = ("treatment", "control", "mcnemarP", "diff", "diffLow", "diffHigh")
ARM_FIELDS: Final = ("correct", "n", "rate", "wilsonLow", "wilsonHigh")


def json_with_fragments(analysis: CohortAnalysis, *, pretty: bool) -> dict[str, Any]:
    """``analysis.to_json()`` with fragments for ``orjson.dumps`` (``pretty``: for
    ``OPT_INDENT_2``, else compact)."""
    head, cohorts = json_parts(analysis, pretty=pretty)
    return {**head, "cohorts": list(cohorts)}


def json_parts(
    analysis: CohortAnalysis, *, pretty: bool
) -> tuple[dict[str, Any], Iterator[dict[str, Any]]]:
    """:func:`json_with_fragments` as its head (the keys before ``"cohorts"``, in order)
    and its cohorts, each cohort's dict built when the iterator reaches it (the fragments
    of every cohort are encoded here, as whole arrays)."""
    labels = analysis.labels()
    arrays = analysis.json_arrays(labels)
    cohorts, contrasts, metrics = analysis.estimate.shape
    reported = analysis.ok[:, None] & analysis.applies  # [cohort, contrast]
    each = np.broadcast_to(reported[:, :, None], (cohorts, contrasts, metrics))
    contrast_of, metric_of = np.indices((cohorts, contrasts, metrics))[1:]
    treatments = [c.treatment for c in analysis.contrasts]
    controls = [c.control for c in analysis.contrasts]
    effect_columns: list[list[bytes] | Coded] = [
        coded(treatments, contrast_of[each]),
        coded(controls, contrast_of[each]),
        coded(METRICS, metric_of[each]),
        *(
            tokens(x[each])
            for x in (
                analysis.estimate,
                analysis.low,
                analysis.high,
                analysis.n,
                analysis.excluded_null,
            )
        ),
        coded([False, True], arrays.win[each]),
        coded(ROLES, labels.role[each]),
        coded(DECISIONS, labels.decision[each]),
        coded([r or None for r in REASONS], labels.reason[each]),
        *(
            tokens(x[each])
            for x in (
                analysis.decision_low,
                analysis.decision_high,
                arrays.p_two,
                labels.p_adjusted,
            )
        ),
    ]
    per_cohort = reported.sum(axis=1)
    effects = object_groups(
        EFFECT_FIELDS, effect_columns, per_cohort * metrics, depth=_EFFECT, pretty=pretty
    )

    pair_of = np.indices((cohorts, contrasts))[1][reported]
    diff, diff_low, diff_high = arrays.diff
    graded = arrays.graded_pairs > 0
    paired = object_groups(
        PAIRED_FIELDS,
        [
            coded(treatments, pair_of),
            coded(controls, pair_of),
            tokens(np.where(graded, arrays.mcnemar_p, np.nan)[reported]),
            *(tokens(x[reported]) for x in (diff, diff_low, diff_high)),
        ],
        per_cohort,
        depth=_PAIR,
        pretty=pretty,
    )

    has_arm = analysis.has_arm.astype(bool)
    n_graded, correct = analysis.graded[has_arm], analysis.correct[has_arm]
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(n_graded > 0, correct / np.maximum(n_graded, 1), np.nan)
    w_low, w_high = arrays.wilson
    to_paired = b"," + newline(_ARM, pretty) + key("paired", pretty)
    arms = object_groups(
        ARM_FIELDS,
        [
            tokens(correct),
            tokens(n_graded),
            tokens(rate),
            tokens(w_low[has_arm]),
            tokens(w_high[has_arm]),
        ],
        has_arm.sum(axis=1),
        depth=_ARM,
        pretty=pretty,
        names=coded(analysis.arms, np.indices(has_arm.shape)[1][has_arm]),
        open_=b"{",
        close=to_paired,
        empty=b"{" + to_paired[1:],
    )
    correctness_end = newline(_ARM - 1, pretty) + b"}"

    head = {**analysis.header(labels), "decisions": analysis.decision_counts(labels)}
    return head, _cohorts(analysis, effects, arms, paired, correctness_end)


def _cohorts(
    analysis: CohortAnalysis,
    effects: list[bytes],
    arms: list[bytes],
    paired: list[bytes],
    correctness_end: bytes,
) -> Iterator[dict[str, Any]]:
    """Each cohort's dict, its effects and correctness the pre-encoded text."""
    min_pairs = analysis.plan.plan.min_pairs
    ok, pairs = analysis.ok.tolist(), analysis.pairs.tolist()
    excluded, coverage = analysis.excluded.tolist(), analysis.join_coverage.tolist()
    for idx, cohort_key in enumerate(analysis.keys.iter_rows(named=True)):
        is_ok = bool(ok[idx])
        exact, fallback, missing = (int(x) for x in coverage[idx])
        yield {
            "key": cohort_key,
            "status": "ok" if is_ok else "insufficient",
            "pairs": int(pairs[idx]),
            "exploratory": is_ok and int(pairs[idx]) < min_pairs,
            "excluded": int(excluded[idx]),
            "flags": analysis.flags(idx, cohort_key),
            "effects": orjson.Fragment(effects[idx]),
            "correctness": orjson.Fragment(arms[idx] + paired[idx] + correctness_end),
            "joinCoverage": {"exact": exact, "fallback": fallback, "missing": missing},
        }
