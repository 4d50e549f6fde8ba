"""The scripted model follows an intervention's usage recipe (issue 26 item 4): the
recipe's calls replace the built-in steps in each CLI's vocabulary, a deferred tool is
loaded through the CLI's tool search first, the edits are unchanged and the run is
reproducible from the seed."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pairlab.adapters.emulator.catalog_scripts import task_script
from pairlab.core.emulator.conversation import Conversation, PastCall, ToolRef
from pairlab.core.emulator.scripted_model import ModelTurn, ScriptChoices, TaskScript, next_turn
from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.schemas.intervention_manifest import manifest_sha256, parse_manifest
from pairlab.core.schemas.usage_recipe import EpisodeRecipe, TaskRecipe
from tests.support import CATALOG_DIR, REPO_ROOT

GIT = "mcp-server-git"
GIT_TOOLS = ("git_status", "git_diff_unstaged", "git_log")
CLAUDE_BUILTINS = ("Bash", "Read", "Edit", "Write", "ToolSearch")
CODEX_BUILTINS = (ToolRef("exec_command"), ToolRef("apply_patch", kind="custom"))
SEED = 0  # fix-median, seed 0: lists the files, reads the README, compiles (drawn below)

GIT_RECIPE = TaskRecipe.model_validate(
    {
        "final_check": [
            {"tool": "git_status", "arguments": {"repo_path": "{workspace}"}},
            {"tool": "git_diff_unstaged", "arguments": {"repo_path": "{workspace}"}},
        ]
    }
)
GRAPH_RECIPE = TaskRecipe.model_validate(
    {
        "setup": [{"tool": "build", "arguments": {"full_rebuild": True}}],
        "list_files": [{"tool": "search", "arguments": {"query": "median"}}],
        "read_file": [{"tool": "summary", "arguments": {"target": "{workspace}/{file}"}}],
    }
)


def claude_conv(deferred: tuple[str, ...]) -> Conversation:
    return Conversation(
        dialect="claude",
        tools=tuple(ToolRef(t) for t in CLAUDE_BUILTINS),
        deferred=frozenset(deferred),
        search_tool="ToolSearch",
        history=(),
        cwd="/ws",
        offered_names=CLAUDE_BUILTINS + deferred,
    )


def codex_conv(hint: str) -> Conversation:
    return Conversation(
        dialect="codex",
        tools=CODEX_BUILTINS,
        deferred=frozenset(),
        search_tool="tool_search",
        history=(),
        cwd="/ws",
        offered_names=("apply_patch", "exec_command", "tool_search"),
        search_hint=hint,
    )


def play(task: TaskScript, conv: Conversation, seed: int = SEED) -> list[ModelTurn]:
    """Run the script to its end as the CLI would: a search loads what it asked for."""
    turns: list[ModelTurn] = []
    for _ in range(60):
        turn = next_turn(task, conv, seed=seed, wrong_probability=0.1)
        turns.append(turn)
        if turn.call is None:
            return turns
        call = turn.call
        tools = conv.tools
        if call.name == "ToolSearch":
            selected = str((call.arguments or {})["query"]).removeprefix("select:").split(",")
            tools = tools + tuple(ToolRef(n) for n in selected if n in conv.deferred)
            conv = replace(conv, deferred=conv.deferred - set(selected))
        elif call.kind == "tool_search":
            server, *names = str((call.arguments or {})["query"]).split()
            namespace = "mcp__" + server.replace("-", "_")
            tools = tools + tuple(ToolRef(n, namespace) for n in names)
        past = PastCall(call.qualified, call.arguments or call.raw_input, f"payload of {call.name}")
        conv = replace(conv, tools=tools, history=(*conv.history, past))
    pytest.fail("the script did not end")


def with_recipe(task: TaskScript, server: str, recipe: TaskRecipe) -> TaskScript:
    return replace(task, recipe=EpisodeRecipe(server=server, recipe=recipe))


def calls(turns: list[ModelTurn]) -> list[tuple[str, Any]]:
    return [(t.call.qualified, t.call.arguments) for t in turns if t.call is not None]


def test_the_seed_draws_every_replaceable_step() -> None:
    choices = ScriptChoices.draw("fix-median", SEED, 0.1)
    assert (choices.variant, choices.list_files, choices.compile_check) == ("correct", True, True)


def test_claude_loads_the_deferred_tools_then_replaces_the_final_check() -> None:
    task = task_script("fix-median", CATALOG_DIR)
    deferred = tuple(f"mcp__{GIT}__{t}" for t in GIT_TOOLS)
    plain = calls(play(task, claude_conv(deferred)))
    followed = calls(play(with_recipe(task, GIT, GIT_RECIPE), claude_conv(deferred)))
    compile_check = [c for c in plain if c[0] == "Bash" and "ast.parse" in c[1]["command"]]
    assert len(compile_check) == 1  # the built-in check the recipe replaces
    at = plain.index(compile_check[0])
    assert followed[:at] == plain[:at]  # everything before it is the same script
    assert followed[at:] == [
        (
            "ToolSearch",
            {"query": f"select:mcp__{GIT}__git_diff_unstaged,mcp__{GIT}__git_status"},
        ),
        (f"mcp__{GIT}__git_status", {"repo_path": "/ws"}),
        (f"mcp__{GIT}__git_diff_unstaged", {"repo_path": "/ws"}),
    ]
    assert not any(name.startswith(f"mcp__{GIT}") for name, _ in plain)  # no recipe: floor


def test_codex_searches_the_namespace_and_calls_with_it() -> None:
    task = with_recipe(task_script("fix-median", CATALOG_DIR), GIT, GIT_RECIPE)
    turns = play(task, codex_conv(hint=f"Search the tools of: {GIT}"))
    got = calls(turns)
    search = next(i for i, t in enumerate(turns) if t.call and t.call.kind == "tool_search")
    assert got[search] == (
        "tool_search",
        {"query": f"{GIT} git_status git_diff_unstaged", "limit": 2},
    )
    assert got[search + 1 : search + 3] == [
        ("mcp__mcp_server_git/git_status", {"repo_path": "/ws"}),
        ("mcp__mcp_server_git/git_diff_unstaged", {"repo_path": "/ws"}),
    ]
    assert not any("ast.parse" in str(args) for _, args in got)
    assert turns[-1].call is None and turns[-1].variant == "correct"


def test_without_the_tool_on_offer_the_built_in_step_is_played() -> None:
    task = task_script("fix-median", CATALOG_DIR)
    plain = calls(play(task, claude_conv(())))
    assert calls(play(with_recipe(task, GIT, GIT_RECIPE), claude_conv(()))) == plain
    codex_plain = calls(play(task, codex_conv(hint="Search the tools of: other")))
    followed = play(
        with_recipe(task, GIT, GIT_RECIPE), codex_conv(hint="Search the tools of: other")
    )
    assert calls(followed) == codex_plain


def test_setup_runs_once_and_each_read_gets_its_file() -> None:
    task = task_script("fix-median", CATALOG_DIR)
    deferred = tuple(f"mcp__graph__{t}" for t in ("build", "search", "summary"))
    turns = play(with_recipe(task, "graph", GRAPH_RECIPE), claude_conv(deferred))
    got = calls(turns)
    names = [name for name, _ in got]
    assert names[:3] == ["ToolSearch", "mcp__graph__build", "mcp__graph__search"]
    assert names.count("mcp__graph__build") == 1 and names.count("ToolSearch") == 1
    reads = [args["target"] for name, args in got if name == "mcp__graph__summary"]
    assert reads == ["/ws/README.md", "/ws/stats.py"]  # the README, then the changed file
    assert "Read" not in [n for n, a in got if n == "Read" and "offset" not in a]
    # the edit still happens (Edit needs a Read of the changed lines first)
    edit = next(i for i, n in enumerate(names) if n == "Edit")
    assert names[edit - 1] == "Read" and "offset" in got[edit - 1][1]


def test_the_same_seed_plays_the_same_turns() -> None:
    task = with_recipe(task_script("fix-median", CATALOG_DIR), GIT, GIT_RECIPE)
    conv = claude_conv(tuple(f"mcp__{GIT}__{t}" for t in GIT_TOOLS))
    assert calls(play(task, conv)) == calls(play(task, conv))


def test_a_wrong_variant_still_follows_the_recipe_and_misses_the_last_change() -> None:
    seed = next(
        s for s in range(200) if ScriptChoices.draw("fix-median", s, 0.1).variant == "wrong"
    )
    task = task_script("fix-median", CATALOG_DIR)
    conv = claude_conv(tuple(f"mcp__{GIT}__{t}" for t in GIT_TOOLS))
    plain = play(task, conv, seed)
    followed = play(with_recipe(task, GIT, GIT_RECIPE), conv, seed)
    assert followed[-1].variant == plain[-1].variant == "wrong"
    assert [c for c in calls(followed) if c[0] == "Edit"] == [
        c for c in calls(plain) if c[0] == "Edit"
    ]


# -- the manifest field -------------------------------------------------------------


def _manifest(recipes: object) -> dict[str, Any]:
    import yaml

    data = yaml.safe_load((REPO_ROOT / "interventions" / "mcp-server-git.yaml").read_text())
    data["recipes"] = recipes
    data.pop("workspace", None)
    return dict(data)


def test_an_unknown_placeholder_is_refused() -> None:
    bad = {
        "fix-median": {
            "final_check": [{"tool": "git_status", "arguments": {"repo_path": "{repo}"}}]
        }
    }
    with pytest.raises(InvalidInputError) as err:
        parse_manifest(_manifest(bad))
    assert err.value.reason == ReasonCode.INVALID_INTERVENTION and "{repo}" in err.value.message
    file_outside_read = {
        "fix-median": {"final_check": [{"tool": "git_status", "arguments": {"p": "{file}"}}]}
    }
    with pytest.raises(InvalidInputError):
        parse_manifest(_manifest(file_outside_read))


def test_a_recipe_with_an_unknown_field_or_nothing_to_replace_is_refused() -> None:
    with pytest.raises(InvalidInputError) as err:
        parse_manifest(_manifest({"fix-median": {"final_chek": []}}))
    assert err.value.reason == ReasonCode.INTERVENTION_UNKNOWN_FIELD
    with pytest.raises(InvalidInputError) as err:
        parse_manifest(_manifest({"fix-median": {"setup": [{"tool": "git_status"}]}}))
    assert err.value.reason == ReasonCode.INVALID_INTERVENTION


def test_recipes_change_the_hash_and_none_leaves_it_as_before() -> None:
    with_none = parse_manifest(_manifest({}))
    without = _manifest({})
    del without["recipes"]
    assert manifest_sha256(with_none) == manifest_sha256(parse_manifest(without))
    recipe = {"fix-median": {"final_check": [{"tool": "git_status"}]}}
    assert manifest_sha256(parse_manifest(_manifest(recipe))) != manifest_sha256(with_none)
    copy = {**without, "workspace": "copy"}  # the default workspace hashes as before too
    assert manifest_sha256(parse_manifest(copy)) == manifest_sha256(with_none)


# -- how a recipe reaches the episode's script ---------------------------------------


def test_only_a_treated_arm_of_a_task_with_a_recipe_gets_it(tmp_path: Path) -> None:
    from pairlab.adapters.emulator.service import EmulatorService
    from pairlab.adapters.interventions import LoadedIntervention
    from pairlab.adapters.profiles import load_named_profile
    from pairlab.core.emulator.request_ledger import EpisodeRegistration
    from pairlab.core.schemas.intervention_manifest import intervention_identity

    recipe = {"fix-median": {"final_check": [{"tool": "git_status"}]}}
    manifest = parse_manifest(_manifest(recipe))
    loaded = LoadedIntervention(manifest, REPO_ROOT / "x.yaml", intervention_identity(manifest))
    stamp = load_named_profile("claude", intervention=loaded).intervention
    assert stamp is not None
    treated = stamp.episode_recipe("fix-median", "optimizer")
    assert treated is not None and treated.server == GIT
    assert stamp.episode_recipe("fix-median", "baseline") is None
    assert stamp.episode_recipe("refactor-rename-total", "optimizer") is None
    assert "recipes" not in stamp.model_dump()  # never serialized (the hash names it)
    service = EmulatorService(tmp_path, catalog_dir=CATALOG_DIR)
    ep = service.register(
        EpisodeRegistration(task_id="fix-median", arm="optimizer", recipe=treated)
    )
    assert ep.script.recipe == treated
    plain = service.register(EpisodeRegistration(task_id="fix-median", seed=1))
    assert plain.script.recipe is None
