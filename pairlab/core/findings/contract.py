"""The semantic finding contract a ``wiki_write`` call must satisfy (causal protocol seed).

A finding is: ``claim`` (a compact, durable conclusion), ``anchors`` (real files or
symbols of the workspace: ``path`` or ``path#symbol``), ``evidence`` (the concrete
observation that established it), ``applicability`` (when a later model should use
it), ``confidenceLabel`` (verified | probable | speculative), ``scope`` (project |
organization | global; project by default) and ``invalidators`` (changes or
assumptions that require re-validation). :func:`validate_finding` refuses a call
with :class:`ContractRefusal` naming the first failing field, in that order.

Its identity is content-addressed on the *normalized* finding (claim lower-cased
with whitespace collapsed, anchors sorted, scope): exact normalized duplicates get
the same ``findingId`` and collapse to one active finding in the graph.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

CONTRACT_FIELDS: Final = (
    "claim",
    "anchors",
    "evidence",
    "applicability",
    "confidenceLabel",
    "scope",
    "invalidators",
)
CONFIDENCE_LABELS: Final = ("verified", "probable", "speculative")
SCOPES: Final = ("project", "organization", "global")
DEFAULT_SCOPE: Final = "project"
MAX_CLAIM_CHARS: Final = 400
MAX_TEXT_CHARS: Final = 2000
MAX_ANCHORS: Final = 16
_SPACES = re.compile(r"\s+")


class ContractRefusal(Exception):
    """A ``wiki_write`` argument breaks the contract; ``field`` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass(frozen=True, order=True)
class Anchor:
    path: str
    symbol: str | None = None

    @property
    def label(self) -> str:
        return f"{self.path}#{self.symbol}" if self.symbol else self.path

    @staticmethod
    def parse(text: str) -> Anchor:
        path, _, symbol = text.strip().partition("#")
        return Anchor(path.strip(), symbol.strip() or None)


# (anchor) -> None when it is a real file/symbol of the workspace, else why not
AnchorCheck = Callable[[Anchor], "str | None"]


@dataclass(frozen=True)
class FindingDraft:
    claim: str
    anchors: tuple[Anchor, ...]
    evidence: str
    applicability: str
    confidence_label: str
    scope: str
    invalidators: tuple[str, ...]

    @property
    def finding_id(self) -> str:
        return finding_id_of(self)

    def to_json(self) -> dict[str, Any]:
        return {
            "claim": self.claim,
            "anchors": [a.label for a in self.anchors],
            "evidence": self.evidence,
            "applicability": self.applicability,
            "confidenceLabel": self.confidence_label,
            "scope": self.scope,
            "invalidators": list(self.invalidators),
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> FindingDraft:
        """A draft from its stored JSON (already validated when it was written)."""
        return FindingDraft(
            claim=str(data["claim"]),
            anchors=tuple(Anchor.parse(str(a)) for a in data.get("anchors", [])),
            evidence=str(data.get("evidence", "")),
            applicability=str(data.get("applicability", "")),
            confidence_label=str(data.get("confidenceLabel", "speculative")),
            scope=str(data.get("scope", DEFAULT_SCOPE)),
            invalidators=tuple(str(i) for i in data.get("invalidators", [])),
        )


def normalize_text(text: str) -> str:
    return _SPACES.sub(" ", text).strip().lower()


def finding_id_of(draft: FindingDraft) -> str:
    key = {
        "claim": normalize_text(draft.claim),
        "anchors": sorted({a.label for a in draft.anchors}),
        "scope": draft.scope,
    }
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()
    return f"f-{digest[:16]}"


def _text(arguments: Mapping[str, object], name: str, limit: int) -> str:
    value = arguments.get(name)
    if not isinstance(value, str) or not value.strip():
        raise ContractRefusal(name, "required: a non-empty string")
    if len(value) > limit:
        raise ContractRefusal(name, f"too long ({len(value)} characters; at most {limit})")
    return _SPACES.sub(" ", value).strip()


def _anchors(value: object, check: AnchorCheck) -> tuple[Anchor, ...]:
    if not isinstance(value, list) or not value:
        raise ContractRefusal("anchors", "required: a non-empty list of 'path' or 'path#symbol'")
    if len(value) > MAX_ANCHORS:
        raise ContractRefusal("anchors", f"at most {MAX_ANCHORS} anchors")
    anchors: list[Anchor] = []
    for item in value:
        if isinstance(item, Mapping):
            path, symbol = item.get("path"), item.get("symbol")
            text = f"{path}#{symbol}" if symbol else str(path) if path else ""
        else:
            text = item if isinstance(item, str) else ""
        anchor = Anchor.parse(text)
        if not anchor.path:
            raise ContractRefusal("anchors", f"{item!r} is not 'path' or 'path#symbol'")
        problem = check(anchor)
        if problem is not None:
            raise ContractRefusal("anchors", f"{anchor.label}: {problem}")
        anchors.append(anchor)
    return tuple(sorted(set(anchors)))


def validate_finding(arguments: Mapping[str, object], check: AnchorCheck) -> FindingDraft:
    """The finding a ``wiki_write`` call asks for, or :class:`ContractRefusal`."""
    claim = _text(arguments, "claim", MAX_CLAIM_CHARS)
    anchors = _anchors(arguments.get("anchors"), check)
    evidence = _text(arguments, "evidence", MAX_TEXT_CHARS)
    applicability = _text(arguments, "applicability", MAX_TEXT_CHARS)
    label = arguments.get("confidenceLabel")
    if label not in CONFIDENCE_LABELS:
        raise ContractRefusal(
            "confidenceLabel", f"{label!r} is not one of {', '.join(CONFIDENCE_LABELS)}"
        )
    scope = arguments.get("scope", DEFAULT_SCOPE)
    scope = DEFAULT_SCOPE if scope is None else scope
    if scope not in SCOPES:
        raise ContractRefusal("scope", f"{scope!r} is not one of {', '.join(SCOPES)}")
    raw = arguments.get("invalidators")
    if (
        not isinstance(raw, list)
        or not raw
        or not all(isinstance(i, str) and i.strip() for i in raw)
    ):
        raise ContractRefusal(
            "invalidators", "required: a non-empty list of the changes that would invalidate it"
        )
    return FindingDraft(
        claim=claim,
        anchors=anchors,
        evidence=evidence,
        applicability=applicability,
        confidence_label=str(label),
        scope=str(scope),
        invalidators=tuple(_SPACES.sub(" ", i).strip() for i in raw),
    )
