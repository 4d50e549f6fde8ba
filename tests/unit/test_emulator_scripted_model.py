"""The scripted model (core.emulator.scripted_model): catalog solutions played in each
CLI's tools, chosen from what the request offers, reproducible from the seed."""

from __future__ import annotations

from dataclasses import replace

import pytest

from pairlab.adapters.emulator.catalog_scripts import task_script
from pairlab.core.emulator.conversation import (
    Conversation,
    PastCall,
    ToolRef,
    claude_conversation,
    codex_conversation,
)
from pairlab.core.emulator.edits import FileChange, apply_patch_text, replacement
from pairlab.core.emulator.scripted_model import (
    WRONG_FINAL_ANSWER,
    ModelTurn,
    ScriptChoices,
    TaskScript,
    next_turn,
)
from pairlab.core.schemas.catalog import load_suite
from tests.emulator_support import claude_request, codex_request
from tests.support import CATALOG_DIR

TASK_IDS = [t.id for t in load_suite(CATALOG_DIR, "core").tasks]
CLAUDE_BUILTINS = ("Bash", "Read", "Edit", "Write", "ToolSearch")
CODEX_BUILTINS = (ToolRef("exec_command"), ToolRef("apply_patch", kind="custom"))


def claude_conv(
    tools: tuple[str, ...] = CLAUDE_BUILTINS, deferred: frozenset[str] = frozenset()
) -> Conversation:
    return Conversation(
        dialect="claude",
        tools=tuple(ToolRef(t) for t in tools),
        deferred=deferred,
        search_tool="ToolSearch" if "ToolSearch" in tools else None,
        history=(),
        cwd="/ws",
        offered_names=tools,
    )


def codex_conv(tools: tuple[ToolRef, ...] = CODEX_BUILTINS, hint: str = "") -> Conversation:
    return Conversation(
        dialect="codex",
        tools=tools,
        deferred=frozenset(),
        search_tool="tool_search" if hint else None,
        history=(),
        cwd="/ws",
        offered_names=tuple(t.qualified for t in tools),
        search_hint=hint,
    )


def play(
    task: TaskScript, conv: Conversation, seed: int, p_wrong: float = 0.0, answer=lambda call: "ok"
) -> list[ModelTurn]:  # type: ignore[no-untyped-def]
    """Run the script to its end, feeding each call's result back as the CLI would."""
    turns: list[ModelTurn] = []
    for _ in range(40):
        turn = next_turn(task, conv, seed=seed, wrong_probability=p_wrong)
        turns.append(turn)
        if turn.call is None:
            return turns
        past = PastCall(
            turn.call.qualified, turn.call.arguments or turn.call.raw_input, answer(turn.call)
        )
        tools = conv.tools
        if turn.call.name == "ToolSearch":  # the search loaded what it selected
            tools = tools + tuple(ToolRef(n) for n in sorted(conv.deferred))
            conv = replace(conv, deferred=frozenset())
        if turn.call.kind == "tool_search":
            tools = (
                *tools,
                ToolRef("read_file", "mcp__token_optimizer"),
                ToolRef("expand", "mcp__token_optimizer"),
            )
        conv = replace(conv, tools=tools, history=(*conv.history, past))
    pytest.fail("the script did not end")


def apply_claude_edits(task: TaskScript, turns: list[ModelTurn]) -> dict[str, str]:
    files = {c.path: c.before for c in task.changes if c.before is not None}
    for turn in turns:
        call = turn.call
        if call is None or call.name not in ("Edit", "Write"):
            continue
        args = call.arguments or {}
        rel = args["file_path"].removeprefix("/ws/")
        if call.name == "Write":
            files[rel] = args["content"]
        else:
            assert files[rel].count(args["old_string"]) == 1  # Edit needs a unique match
            files[rel] = files[rel].replace(args["old_string"], args["new_string"])
    return files


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_claude_edits_turn_the_fixture_into_the_solution(task_id: str) -> None:
    task = task_script(task_id, CATALOG_DIR)
    for seed in range(4):
        turns = play(task, claude_conv(), seed)
        assert apply_claude_edits(task, turns) == {c.path: c.after for c in task.changes}
        assert turns[-1].text == task.final_answer
        edited = {
            (t.call.arguments or {})["file_path"] for t in turns if t.call and t.call.name == "Edit"
        }
        read = {
            (t.call.arguments or {})["file_path"] for t in turns if t.call and t.call.name == "Read"
        }
        assert edited <= read  # Claude's Edit refuses a file not Read in the session


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_the_wrong_variant_leaves_out_the_last_change_and_names_nothing(task_id: str) -> None:
    task = task_script(task_id, CATALOG_DIR)
    turns = play(task, claude_conv(), seed=1, p_wrong=1.0)
    assert {t.variant for t in turns} == {"wrong"}
    files = apply_claude_edits(task, turns)
    last = task.changes[-1]
    assert files.get(last.path) == last.before  # untouched (None: never created)
    assert turns[-1].text == WRONG_FINAL_ANSWER


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_codex_patches_each_changed_file_in_the_apply_patch_grammar(task_id: str) -> None:
    task = task_script(task_id, CATALOG_DIR)
    turns = play(task, codex_conv(), seed=0)
    patches = [t.call.raw_input or "" for t in turns if t.call and t.call.name == "apply_patch"]
    assert patches and all(
        p.startswith("*** Begin Patch\n") and p.endswith("*** End Patch\n") for p in patches
    )
    text = "".join(patches)
    for change in task.changes:
        verb = "Update" if change.before is not None else "Add"
        assert f"*** {verb} File: {change.path}\n" in text
    reads = [t.call.arguments for t in turns if t.call and t.call.name == "exec_command"]
    wanted = [c.path for c in task.changes if c.before is not None] + list(task.context)
    assert wanted and all(any(f"cat {w}" in str(r) for r in reads) for w in wanted)


def test_a_tool_the_request_does_not_offer_is_never_called() -> None:
    task = task_script("fix-median", CATALOG_DIR)
    turns = play(task, claude_conv(tools=("Bash", "Read")), seed=0)
    assert all(t.call is None or t.call.name in ("Bash", "Read") for t in turns)
    turns = play(task, codex_conv(tools=(ToolRef("exec_command"),)), seed=0)
    assert all(t.call is None or t.call.name == "exec_command" for t in turns)


def test_treated_requests_reach_the_intervention_through_the_tool_search() -> None:
    task = task_script("refactor-rename-total", CATALOG_DIR)
    deferred = frozenset({"mcp__token-optimizer__read_file", "mcp__token-optimizer__expand"})
    preview = "first lines...\nexpansion reference: sha256:" + "a" * 64
    turns = play(task, claude_conv(deferred=deferred), seed=2, answer=lambda call: preview)
    names = [t.call.name for t in turns if t.call]
    assert names[0] == "ToolSearch"
    assert names.count("mcp__token-optimizer__read_file") == 3
    assert names.count("mcp__token-optimizer__expand") == 3  # every preview expanded before editing
    assert "Edit" in names
    codex = play(task, codex_conv(hint="- token-optimizer"), seed=2, answer=lambda call: preview)
    qualified = [t.call.qualified for t in codex if t.call]
    assert qualified[0] == "tool_search"
    assert (
        "mcp__token_optimizer/read_file" in qualified and "mcp__token_optimizer/expand" in qualified
    )


def test_the_baseline_never_searches_for_tools_nobody_offered() -> None:
    task = task_script("refactor-rename-total", CATALOG_DIR)
    names = [t.call.name for t in play(task, claude_conv(), seed=2) if t.call]
    assert "ToolSearch" not in names and not any(n.startswith("mcp__") for n in names)


def test_a_retried_request_gets_the_same_turn_and_seeds_vary_the_script() -> None:
    task = task_script("refactor-rename-total", CATALOG_DIR)
    conv = claude_conv()
    assert next_turn(task, conv, seed=7) == next_turn(task, conv, seed=7)
    lengths = {len(play(task, claude_conv(), seed)) for seed in range(12)}
    assert len(lengths) > 1  # the number of turns varies with the seed


def test_the_wrong_rate_follows_the_drawn_probability() -> None:
    wrong = sum(
        ScriptChoices.draw("fix-median", seed, 0.1).variant == "wrong" for seed in range(2000)
    )
    assert 150 <= wrong <= 250  # 200 expected; 3.7 standard deviations either side


def test_requests_shaped_like_the_clis_are_read_back_into_the_same_conversation() -> None:
    body = claude_request("fix it")
    body["tools"].append(
        {"name": "mcp__token-optimizer__read_file", "input_schema": {}, "defer_loading": True}
    )
    conv = claude_conversation(body)
    assert (
        conv.cwd == "/work/space"
        and conv.has("Edit")
        and not conv.has("mcp__token-optimizer__read_file")
    )
    assert "mcp__token-optimizer__read_file" in conv.deferred
    codex = codex_conversation(codex_request("fix it", search=True))
    assert (
        codex.cwd == "/work/space"
        and codex.has("apply_patch")
        and "token-optimizer" in codex.search_hint
    )


def test_replacement_widens_until_unique_and_patches_mark_a_missing_final_newline() -> None:
    before = "a = 1\nb = 2\na = 1\nc = 3\n"
    old, new = replacement(before, "a = 1\nb = 2\na = 1\nc = 4\n")
    assert before.count(old) == 1 and before.replace(old, new) == "a = 1\nb = 2\na = 1\nc = 4\n"
    dup_old, _ = replacement("x\ny\nx\n", "x\ny\nz\n")
    assert "x\ny\nx\n".count(dup_old) == 1
    patch = apply_patch_text([FileChange("f.txt", "one\ntwo", "one\nthree")])
    assert patch.endswith("+three\n*** End of File\n*** End Patch\n")


def test_a_preview_read_only_for_context_is_not_expanded() -> None:
    """The README is read for context (seed 0 draws it): its preview stays a preview; only
    the file the solution edits is expanded before the edit."""
    task = task_script("navigate-legacy-parse", CATALOG_DIR)
    assert task.readme == "README.md" and len(task.changes) == 1
    deferred = frozenset({"mcp__token-optimizer__read_file", "mcp__token-optimizer__expand"})
    preview = "first lines...\nexpansion reference: sha256:" + "b" * 64
    turns = play(task, claude_conv(deferred=deferred), seed=0, answer=lambda call: preview)
    calls = [t.call for t in turns if t.call]
    reads = [c.arguments["path"] for c in calls if c.name == "mcp__token-optimizer__read_file"]
    assert reads == ["README.md", task.changes[0].path]
    expands = [c for c in calls if c.name == "mcp__token-optimizer__expand"]
    assert len(expands) == 1  # the edited file only
    index = calls.index(expands[0])
    assert calls[index - 1].arguments == {"path": task.changes[0].path}
