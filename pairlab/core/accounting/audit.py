"""The savings audit: verified headline, exclusions and concentration over one or many ledgers.

Input is the stored rows of each ledger (one per episode); each ledger is
tallied on its own (expansions link to previews of their own episode, see
:mod:`pairlab.core.accounting.savings`), then the tallies are merged -- in total
and per arm when the ledgers come from a run directory. The report's JSON shape
is the ``pairlab audit-savings --json`` contract.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from pairlab.core.accounting.ledger_rules import claimed_tokens
from pairlab.core.accounting.savings import (
    EXPANSION_WITHOUT_PREVIEW,
    JudgedRow,
    SavingsTally,
    StoredRow,
    tally_ledger,
)
from pairlab.core.accounting.tokenizer import TOKENIZER_NOTE

LARGEST_EXCLUDED: Final = 10


@dataclass(frozen=True)
class LedgerSource:
    """One ledger to audit: its rows, the episode (or file) it belongs to, its arm if known."""

    name: str
    rows: Sequence[StoredRow]
    arm: str | None = None
    duplicate_attempts: int = 0
    malformed_lines: int = 0


@dataclass(frozen=True)
class _Excluded:
    source: str
    judged: JudgedRow


def _nullable_headline(tally: SavingsTally) -> dict[str, int | None]:
    totals = tally.totals()
    return {
        "verified_net_tokens": totals["verified_net_tokens"],
        "gross_reduction_tokens": totals["gross_reduction_tokens"],
        "expansion_debit_tokens": totals["expansion_debit_tokens"],
        "observed_returned_tokens": totals["observed_returned_tokens"],
    }


def _by_tool(tally: SavingsTally) -> dict[str, dict[str, Any]]:
    positive_gross = sum(max(t.gross, 0) for t in tally.by_tool.values())
    out: dict[str, dict[str, Any]] = {}
    for name in sorted(tally.by_tool, key=lambda n: (-tally.by_tool[n].net, n)):
        tool = tally.by_tool[name]
        out[name] = {
            "verified_net_tokens": tool.net,
            "gross_reduction_tokens": tool.gross,
            "expansion_debit_tokens": tool.debit,
            "observed_returned_tokens": tool.observed,
            "qualified_rows": tool.qualified_rows,
            # Concentration: this tool's share of all positive gross reduction.
            "share_of_gross": (max(tool.gross, 0) / positive_gross) if positive_gross > 0 else None,
        }
    return out


def _excluded_entry(item: _Excluded) -> dict[str, Any]:
    row = item.judged.row
    return {
        "ledger": item.source,
        "tool": row.get("tool"),
        "kind": row.get("kind"),
        "provenance": row.get("provenance"),
        "process_id": row.get("process_id"),
        "session_id": row.get("session_id"),
        "rpc_id": row.get("rpc_id"),
        "claimed_tokens": claimed_tokens(row),
        "reasons": [str(r) for r in item.judged.qualification.reasons],
    }


def _largest(excluded: Sequence[_Excluded], limit: int) -> list[dict[str, Any]]:
    def key(item: _Excluded) -> tuple[int, int]:
        claim = claimed_tokens(item.judged.row)
        return (0, -claim) if claim is not None else (1, 0)

    return [_excluded_entry(x) for x in sorted(excluded, key=key)[:limit]]


def _section(
    tally: SavingsTally, excluded: Sequence[_Excluded], counts: Sequence[int]
) -> dict[str, Any]:
    duplicates, ledgers, malformed = counts
    by_reason: Counter[str] = Counter()
    claimed_by_reason: dict[str, int] = {}
    for item in excluded:
        claim = claimed_tokens(item.judged.row)
        for reason in item.judged.qualification.reasons:
            by_reason[str(reason)] += 1
            if claim is not None:
                claimed_by_reason[str(reason)] = claimed_by_reason.get(str(reason), 0) + claim
    return {
        **_nullable_headline(tally),
        "ledgers": ledgers,
        "qualified_rows": tally.qualified_rows,
        "qualified_reductions": tally.qualified_reductions,
        "qualified_expansions": tally.qualified_expansions,
        "excluded_count": len(excluded),
        "excluded_by_reason": dict(sorted(by_reason.items())),
        "excluded_claimed_tokens_by_reason": {
            r: claimed_by_reason.get(r) for r in sorted(by_reason)
        },
        "flags": {EXPANSION_WITHOUT_PREVIEW: tally.orphan_expansions},
        "duplicate_retries_ignored": duplicates,
        "malformed_lines": malformed,
        "stored_verdicts_overridden": tally.overridden_verdicts,
        "by_tool": _by_tool(tally),
    }


def _count(counts: list[int], source: LedgerSource) -> None:
    counts[0] += source.duplicate_attempts
    counts[1] += 1
    counts[2] += source.malformed_lines


def audit_ledgers(
    sources: Sequence[LedgerSource],
    *,
    tokenizer_encodings: Sequence[str] = (),
    per_arm: bool = False,
    largest: int = LARGEST_EXCLUDED,
) -> dict[str, Any]:
    """The ``pairlab audit-savings --json`` report over ``sources`` (per arm when ``per_arm``)."""
    total = SavingsTally()
    excluded: list[_Excluded] = []
    arms: dict[str, tuple[SavingsTally, list[_Excluded], list[int]]] = {}
    totals = [0, 0, 0]  # duplicate attempts, ledgers, malformed lines
    row_tokenizers: set[str] = set()
    for source in sources:
        tally = tally_ledger(source.rows)
        mine = [_Excluded(source.name, j) for j in tally.excluded]
        total.merge(tally)
        excluded.extend(mine)
        row_tokenizers.update(
            str(s.row["tokenizer"]) for s in source.rows if isinstance(s.row.get("tokenizer"), str)
        )
        _count(totals, source)
        if per_arm:
            arm = source.arm or "unknown"
            arm_tally, arm_excluded, counts = arms.setdefault(arm, (SavingsTally(), [], [0, 0, 0]))
            arm_tally.merge(tally)
            arm_excluded.extend(mine)
            _count(counts, source)
    report = _section(total, excluded, totals)
    report["largest_excluded"] = _largest(excluded, largest)
    if per_arm:
        report["by_arm"] = {
            arm: _section(t, ex, counts) for arm, (t, ex, counts) in sorted(arms.items())
        }
    report["tokenizer"] = {
        "row_encodings": sorted(row_tokenizers),
        "local_encoding": list(tokenizer_encodings),
        "note": TOKENIZER_NOTE,
    }
    report["expansion_rule"] = (
        "an expansion whose preview is missing or excluded still counts as a debit "
        "(conservative) and is flagged expansion-without-preview"
    )
    return report
