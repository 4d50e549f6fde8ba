"""The four ledger quantities of one episode's ledger, computed from its stored rows.

1. observed returned context  = returned_tokens of qualified reductions + qualified expansions
2. gross verified reduction   = saved_tokens of qualified reductions
3. expansion debit            = returned_tokens of qualified expansions
4. net verified avoided       = gross - debit (may be negative)

Rows are re-qualified here with :func:`qualify_row`, whatever verdict the store
recorded when they were written: a stored flag cannot promote a row.

Expansion linking. An expansion's ``expansion_ref`` names the preview it
expands; a preview is the qualified reduction carrying the same ref in the same
ledger (one episode). Decided rule: an expansion that qualifies on its own
always counts as a debit, even when its preview is missing or was excluded --
such an expansion is flagged ``expansion-without-preview``. Dropping it would
make net savings look larger because a preview was lost, so we stay
conservative. A linked debit is attributed to the preview's tool (per-tool
concentration shows the tool whose previews had to be expanded); an orphan to
its own tool.

Null is not zero: a ledger with no qualified row at all has no verified
measurement, so its four quantities are None (counts stay integers).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from pairlab.core.accounting.ledger_rules import Qualification, qualify_row

EXPANSION_WITHOUT_PREVIEW: Final = "expansion-without-preview"


@dataclass(frozen=True)
class StoredRow:
    """One row as the store holds it, with the verdict recorded at write time (None if unknown)."""

    row: Mapping[str, object]
    stored_qualified: bool | None = None


@dataclass
class _Sums:
    """The token sums over qualified rows; ``net`` = gross reductions - expansion debits."""

    gross: int = 0
    debit: int = 0
    observed: int = 0

    @property
    def net(self) -> int:
        return self.gross - self.debit

    def add_sums(self, other: _Sums) -> None:
        self.gross += other.gross
        self.debit += other.debit
        self.observed += other.observed


@dataclass
class ToolTally(_Sums):
    qualified_rows: int = 0


@dataclass(frozen=True)
class JudgedRow:
    row: Mapping[str, object]
    qualification: Qualification
    overrides_stored_verdict: bool


@dataclass
class SavingsTally(_Sums):
    """Sums over qualified rows plus the bookkeeping the audit reports."""

    qualified_reductions: int = 0
    qualified_expansions: int = 0
    orphan_expansions: int = 0
    by_tool: dict[str, ToolTally] = field(default_factory=dict)
    excluded: list[JudgedRow] = field(default_factory=list)
    overridden_verdicts: int = 0

    @property
    def qualified_rows(self) -> int:
        return self.qualified_reductions + self.qualified_expansions

    def tool(self, name: str) -> ToolTally:
        return self.by_tool.setdefault(name, ToolTally())

    def merge(self, other: SavingsTally) -> None:
        self.add_sums(other)
        self.qualified_reductions += other.qualified_reductions
        self.qualified_expansions += other.qualified_expansions
        self.orphan_expansions += other.orphan_expansions
        self.excluded.extend(other.excluded)
        self.overridden_verdicts += other.overridden_verdicts
        for name, tally in other.by_tool.items():
            mine = self.tool(name)
            mine.add_sums(tally)
            mine.qualified_rows += tally.qualified_rows

    def totals(self) -> dict[str, int | None]:
        """The episode record's ``ledger`` field: the four quantities (None when unmeasured) + counts."""
        measured = self.qualified_rows > 0
        return {
            "verified_net_tokens": self.net if measured else None,
            "gross_reduction_tokens": self.gross if measured else None,
            "expansion_debit_tokens": self.debit if measured else None,
            "observed_returned_tokens": self.observed if measured else None,
            "qualified_rows": self.qualified_rows,
            "excluded_rows": len(self.excluded),
            "orphan_expansions": self.orphan_expansions,
        }


def _int(value: object) -> int:
    assert isinstance(value, int)  # guaranteed by qualification
    return value


def tally_ledger(rows: Sequence[StoredRow]) -> SavingsTally:
    """Re-qualify one ledger's rows, link expansions to previews and sum the four quantities."""
    tally = SavingsTally()
    judged: list[JudgedRow] = []
    for stored in rows:
        verdict = qualify_row(stored.row)
        overrides = (
            stored.stored_qualified is not None and stored.stored_qualified != verdict.is_qualified
        )
        judged.append(JudgedRow(stored.row, verdict, overrides))
        tally.overridden_verdicts += overrides
    preview_tool: dict[object, str] = {}
    for item in judged:
        if item.qualification.is_qualified and item.row["kind"] == "reduction":
            preview_tool.setdefault(item.row["expansion_ref"], str(item.row["tool"]))
    for item in judged:
        row = item.row
        if not item.qualification.is_qualified:
            tally.excluded.append(item)
            continue
        returned = _int(row["returned_tokens"])
        tally.observed += returned
        if row["kind"] == "reduction":
            saved = _int(row["saved_tokens"])
            tally.gross += saved
            tally.qualified_reductions += 1
            tool = tally.tool(str(row["tool"]))
            tool.gross += saved
        else:
            tally.debit += returned
            tally.qualified_expansions += 1
            linked = preview_tool.get(row["expansion_ref"])
            if linked is None:
                tally.orphan_expansions += 1
            tool = tally.tool(linked if linked is not None else str(row["tool"]))
            tool.debit += returned
        tool.observed += returned
        tool.qualified_rows += 1
    return tally


def ledger_totals_of(rows: Sequence[StoredRow]) -> dict[str, int | None]:
    return tally_ledger(rows).totals()
