"""The record's finding fields and the tool-call join from the intervention's own log."""

from __future__ import annotations

from typing import Any

from pairlab.core.findings.evidence import summarize


def ev(event: str, rpc: str, client: str | None, **extra: Any) -> dict[str, Any]:
    return {"event": event, "rpcId": rpc, "toolCallId": client, **extra}


DELIVERY = ev(
    "delivery",
    "toolu_1",
    "toolu_1",
    injectionId="inj-1",
    deliveredTokens=120,
    findings=[{"findingId": "f-a", "tokens": 90, "stale": True, "staleAnchors": ["x.py"]}],
)
HOLDOUT = ev(
    "holdout",
    "toolu_1",
    "toolu_1",
    shadowTokens=80,
    findings=[{"findingId": "f-b", "shadowTokens": 80}],
)


def test_exact_when_every_call_id_is_in_the_transcript() -> None:
    events = [
        ev("recall", "toolu_1", "toolu_1"),
        DELIVERY,
        HOLDOUT,
        ev("call", "toolu_1", "toolu_1"),
    ]
    rows = [{"rpc_id": "toolu_2"}]
    got = summarize(events, rows, {"toolu_1", "toolu_2", "toolu_x"})
    assert (got.join_method, got.join_fallback_reason, got.mcp_calls) == ("exact", None, 2)
    assert (got.finding_ids, got.shadow_finding_ids) == (["f-a"], ["f-b"])
    assert (got.delivered_tokens, got.shadow_tokens) == (120, 80)
    assert (got.injection_id, got.tool_call_id, got.stale_delivered) == (
        "inj-1",
        "toolu_1",
        ["f-a"],
    )


def test_every_fallback_is_labelled_with_its_reason() -> None:
    omitted = summarize([ev("call", "7", None)], [], {"toolu_1"})
    assert (omitted.join_method, omitted.join_fallback_reason) == (
        "fallback",
        "client-omitted-tool-call-id",
    )
    assert omitted.unjoined_call_ids == ["7"]
    missing = summarize([ev("call", "toolu_9", "toolu_9")], [], {"toolu_1"})
    assert (missing.join_method, missing.join_fallback_reason) == (
        "fallback",
        "id-not-in-transcript",
    )
    blind = summarize([ev("call", "toolu_9", "toolu_9")], [], None)
    assert (blind.join_method, blind.join_fallback_reason) == ("fallback", "no-transcript")


def test_no_mcp_call_means_nothing_to_join_and_null_not_zero() -> None:
    got = summarize([], [], {"toolu_1"})
    assert (got.join_method, got.mcp_calls) == ("none", 0)
    assert got.delivered_tokens is None and got.shadow_tokens is None  # no recall: unobserved
    answered = summarize([ev("recall", "c", "c")], [], {"c"})
    assert (answered.delivered_tokens, answered.shadow_tokens) == (0, 0)  # observed nothing


def test_ratings_quarantines_writes_and_refusals_are_counted() -> None:
    events = [
        ev("rating", "a", "a", findingId="f-a", rating="harmful"),
        ev("rating", "b", "b", findingId="f-a", rating="helpful"),
        ev("quarantine", "a", "a", findingId="f-a"),
        ev("finding", "c", "c", findingId="f-c"),
        ev("refusal", "d", "d", field="anchors"),
    ]
    got = summarize(events, [], {"a", "b", "c", "d"})
    assert (got.harmful_ratings, got.quarantined, got.written, got.refusals) == (
        1,
        ["f-a"],
        ["f-c"],
        ["anchors"],
    )
