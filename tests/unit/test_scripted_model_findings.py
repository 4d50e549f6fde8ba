"""The scripted model and findings (issue 18): recall first, a delivered useful finding
replaces the orientation reads, a harmful one is rated, a full arm harvests."""

from __future__ import annotations

from pairlab.adapters.emulator.catalog_scripts import task_script
from pairlab.core.emulator.scripted_model import CLAUDE_MCP_PREFIX, ModelTurn, ToolCall
from tests.unit.test_emulator_scripted_model import claude_conv, play

MCP = tuple(CLAUDE_MCP_PREFIX + t for t in ("read_file", "expand", "recall", "rate_finding"))
TOOLS = ("Bash", "Read", "Edit", "Write", *MCP)


def recall_answer(block: str):  # type: ignore[no-untyped-def]
    def answer(call: ToolCall) -> str:
        return block if call.name.endswith("__recall") else "ok"

    return answer


def reads(turns: list[ModelTurn]) -> list[str]:
    return [
        str((t.call.arguments or {}).get("path"))
        for t in turns
        if t.call and t.call.name.endswith("__read_file")
    ]


def finding_block(task_id: str, fid: str = "f-0123456789abcdef") -> str:
    entry = task_script(task_id)
    claim = next(c for c, _ in entry.finding_effects)
    return f"Findings for this task (injection inj-1):\n[{fid}] (verified, project) {claim}\n"


def test_a_delivered_useful_finding_skips_the_orientation_reads() -> None:
    task = task_script("recall-legacy-caller")
    conv = claude_conv(TOOLS)
    without = play(task, conv, seed=1, answer=recall_answer("No finding to deliver for this task."))
    with_it = play(task, conv, seed=1, answer=recall_answer(finding_block("recall-legacy-caller")))
    assert without[0].call is not None and without[0].call.name.endswith("__recall")
    assert set(task.explore) <= set(reads(without))
    assert not set(task.explore) & set(reads(with_it))
    assert len(with_it) < len(without) - len(task.explore) + 1
    assert with_it[-1].text == without[-1].text  # the same answer


def test_a_useless_finding_changes_nothing_and_a_harmful_one_is_rated() -> None:
    task = task_script("recall-legacy-caller-useless")
    conv = claude_conv(TOOLS)
    plain = play(task, conv, seed=2, answer=recall_answer("No finding to deliver for this task."))
    useless = play(task, conv, seed=2, answer=recall_answer(finding_block(task.task_id)))
    assert [t.action for t in plain] == [t.action for t in useless]
    harmful = task_script("recall-harmful-hint")
    turns = play(harmful, conv, seed=2, answer=recall_answer(finding_block(harmful.task_id)))
    rated = [t.call for t in turns if t.call and t.call.name.endswith("__rate_finding")]
    assert len(rated) == 1 and rated[0].arguments == {
        "findingId": "f-0123456789abcdef",
        "rating": "harmful",
        "reason": "it misled the change",
    }


def test_a_full_arm_harvests_and_a_task_without_findings_never_recalls() -> None:
    harvest = task_script("harvest-pipeline-map")
    conv = claude_conv((*TOOLS, CLAUDE_MCP_PREFIX + "wiki_write"))
    turns = play(
        harvest, conv, seed=3, answer=recall_answer("No finding to deliver for this task.")
    )
    writes = [t.call for t in turns if t.call and t.call.name.endswith("__wiki_write")]
    assert [w.arguments["scope"] for w in writes if w.arguments] == ["project", "organization"]
    plain = play(task_script("fix-median"), claude_conv(TOOLS), seed=3)
    assert not any(t.call and t.call.name.endswith("__recall") for t in plain)
