"""Usage recipes against the server's real tools/list (core/recipe_check,
adapters/recipe_validation): a tool the server does not list and arguments its
inputSchema refuses are errors with reason codes before any episode runs; the shipped
recipes fit the shipped servers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from pairlab.adapters.interventions import load_intervention
from pairlab.adapters.recipe_validation import check_run_recipes
from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.recipe_check import check_recipes, require_valid_recipes
from pairlab.core.schemas.usage_recipe import TaskRecipe
from tests.support import REPO_ROOT, cli_exit

TOOLDEFS = REPO_ROOT / "docs" / "research" / "third-party-mcp" / "tooldefs"


def _tools(name: str) -> list[dict[str, Any]]:
    data = json.loads((TOOLDEFS / f"{name}.tools.json").read_text())
    return list(data["tools"] if isinstance(data, dict) else data)


def _recipe(step: str, tool: str, arguments: dict[str, Any]) -> dict[str, TaskRecipe]:
    return {
        "fix-median": TaskRecipe.model_validate({step: [{"tool": tool, "arguments": arguments}]})
    }


def test_a_tool_the_server_does_not_list_is_refused() -> None:
    recipes = _recipe("final_check", "git_stats", {"repo_path": "{workspace}"})
    (problem,) = check_recipes(recipes, _tools("mcp-server-git"))
    assert problem.reason == ReasonCode.RECIPE_UNKNOWN_TOOL
    assert problem.tool == "git_stats" and "git_status" in problem.detail
    with pytest.raises(InvalidInputError) as err:
        require_valid_recipes("mcp-server-git", recipes, _tools("mcp-server-git"))
    assert err.value.reason == ReasonCode.RECIPE_UNKNOWN_TOOL and err.value.exit_code == 2
    assert "fix-median.final_check: git_stats" in err.value.message


@pytest.mark.parametrize(
    ("tool", "arguments", "says"),
    [
        ("git_status", {}, "'repo_path' is a required property"),
        ("git_diff_unstaged", {"repo_path": "{workspace}", "context_lines": "1"}, "context_lines"),
    ],
)
def test_arguments_the_input_schema_refuses_are_refused(
    tool: str, arguments: dict[str, Any], says: str
) -> None:
    (problem,) = check_recipes(_recipe("final_check", tool, arguments), _tools("mcp-server-git"))
    assert problem.reason == ReasonCode.RECIPE_INVALID_ARGUMENTS
    assert says in problem.detail


def test_additional_properties_false_refuses_an_unknown_argument() -> None:
    recipes = _recipe("list_files", "semantic_search_nodes_tool", {"query": "x", "colour": 1})
    (problem,) = check_recipes(recipes, _tools("code-review-graph-focused"))
    assert problem.reason == ReasonCode.RECIPE_INVALID_ARGUMENTS and "colour" in problem.detail


def test_placeholders_are_checked_as_the_strings_they_become() -> None:
    recipes = _recipe(
        "read_file", "query_graph_tool", {"pattern": "file_summary", "target": "{file}"}
    )
    assert check_recipes(recipes, _tools("code-review-graph-focused")) == []


@pytest.mark.parametrize(
    ("intervention", "tooldefs"),
    [("mcp-server-git", "mcp-server-git"), ("code-review-graph", "code-review-graph-focused")],
)
def test_the_shipped_recipes_fit_the_recorded_tools(intervention: str, tooldefs: str) -> None:
    manifest = load_intervention(intervention).manifest
    assert {"fix-median", "navigate-legacy-parse", "refactor-rename-total"} <= set(manifest.recipes)
    assert check_recipes(manifest.recipes, _tools(tooldefs)) == []


# -- against the real server, before the run ------------------------------------------


def _bad_reference(tmp_path: Path, recipes: dict[str, Any]) -> str:
    """The reference manifest (a module install: it starts in a second) with a recipe."""
    data = yaml.safe_load((REPO_ROOT / "interventions" / "reference.yaml").read_text())
    data["recipes"] = recipes
    path = tmp_path / "reference-with-recipe.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_the_real_server_is_asked_and_a_bad_recipe_refused(tmp_path: Path) -> None:
    missing = {"fix-median": {"final_check": [{"tool": "git_status"}]}}
    loaded = load_intervention(_bad_reference(tmp_path, missing))
    with pytest.raises(InvalidInputError) as err:
        check_run_recipes(loaded, ["fix-median"], ["baseline", "optimizer"])
    assert err.value.reason == ReasonCode.RECIPE_UNKNOWN_TOOL
    assert "read_file" in err.value.message  # what the real server lists
    assert check_run_recipes(loaded, ["refactor-rename-total"], ["optimizer"]) == []  # no spawn
    bad_args = {"fix-median": {"read_file": [{"tool": "read_file", "arguments": {"path": 3}}]}}
    with pytest.raises(InvalidInputError) as err:
        check_run_recipes(
            load_intervention(_bad_reference(tmp_path, bad_args)), ["fix-median"], ["full"]
        )
    assert err.value.reason == ReasonCode.RECIPE_INVALID_ARGUMENTS


@pytest.mark.prefect  # the check runs in the flow's plan step (a run the form starts too)
def test_eval_refuses_a_bad_recipe_before_any_episode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = {"fix-median": {"final_check": [{"tool": "git_status"}]}}
    args = [
        *["eval", "--profile", "claude", "--suite", "core", "--arms", "baseline,optimizer"],
        *["--repetitions", "1", "--work-dir", str(tmp_path / "w"), "--json"],
        *["--intervention", _bad_reference(tmp_path, missing)],
    ]
    assert cli_exit(args) == 2
    error = json.loads(capsys.readouterr().out)
    assert error["reason_code"] == "recipe-unknown-tool"
    assert not list((tmp_path / "w").rglob("*.json"))  # no episode record, nothing planned


def test_certify_records_the_servers_tools_and_fails_a_bad_recipe(tmp_path: Path) -> None:
    """certify's pre-episode checks (adapters/certify/live._server_tools), with the real
    reference server in each treated arm."""
    from pairlab.adapters.certify.live import _server_tools
    from pairlab.adapters.certify.report import CertifyCheck
    from pairlab.adapters.profiles import load_named_profile

    bad_args = {"fix-median": {"read_file": [{"tool": "read_file", "arguments": {"path": 3}}]}}
    loaded = load_intervention(_bad_reference(tmp_path, bad_args))
    checks: list[CertifyCheck] = []
    found = _server_tools(load_named_profile("claude", intervention=loaded), loaded, checks)
    assert found is not None and found["optimizer"] == ["read_file", "expand"]
    assert set(found) == {"optimizer", "retrieval", "full"}
    recipes = next(c for c in checks if c.name == "recipes")
    assert not recipes.passed and recipes.detail.startswith("[recipe-invalid-arguments]")
    assert "fix-median.read_file: read_file" in recipes.detail
