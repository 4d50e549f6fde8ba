"""The report says plainly what a scripted model measures, and per task whether the
treated episodes followed the intervention's usage recipe or measured the floor
(issue 26 item 4)."""

from __future__ import annotations

from flows.evidence_eval import scripted_model_use
from pairlab.adapters.interventions import load_intervention
from pairlab.adapters.profiles import load_named_profile
from pairlab.core.report.words import scripted_model_fact
from pairlab.core.schedule import plan_schedule

TASKS = ["fix-median", "navigate-legacy-parse", "write-tests-slugify"]


def _use(intervention: str, profile: str = "claude") -> dict[str, object] | None:
    wired = load_named_profile(profile, intervention=load_intervention(intervention))
    schedule = plan_schedule(TASKS, ["baseline", "optimizer"], 1, 0, "run-x")
    use = scripted_model_use(wired, schedule, None)
    return None if use is None else use.model_dump(mode="json")


def test_a_third_party_run_names_recipe_and_floor_tasks() -> None:
    use = _use("mcp-server-git")
    assert use == {
        "builtin": False,
        "recipe_tasks": ["fix-median", "navigate-legacy-parse"],
        "floor_tasks": ["write-tests-slugify"],
    }
    fact = scripted_model_fact(use)
    assert "measures transport and context cost, not a model's behaviour" in fact
    assert "usage recipe on fix-median, navigate-legacy-parse" in fact
    assert fact.endswith("floor (tool definitions only) on write-tests-slugify")


def test_the_reference_is_in_the_script_and_the_simulator_says_nothing() -> None:
    assert _use("reference") == {"builtin": True, "recipe_tasks": [], "floor_tasks": []}
    assert "in its script" in scripted_model_fact(_use("reference"))
    assert _use("reference", profile="sim") is None
    assert scripted_model_fact(None) == ""
