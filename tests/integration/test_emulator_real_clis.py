"""The real Claude Code and Codex run whole catalog episodes against the provider emulator.

What every episode shows: the CLI executed the scripted model's tool calls in a real
workspace and the task's grader judged the result (the scripted solution passes, the
wrong variant fails); pairlab's usage reader on the files the CLI wrote gives exactly
the emulator's ground-truth vector, and so does the CLI's own account (Claude's
result usage, Codex's ``turn.completed``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pairlab.adapters.backends.local import LocalBackend
from pairlab.adapters.emulator import ProviderEmulator
from pairlab.core.schemas.catalog import TaskEntry, load_suite
from tests.integration.realcli_harness import TRACE, Cli, CliEpisode, run_cli_episode
from tests.support import CATALOG_DIR

pytestmark = pytest.mark.realcli

TASKS = {t.id: t for t in load_suite(CATALOG_DIR, "core").tasks}
CLIS: tuple[Cli, ...] = ("claude", "codex")


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    with ProviderEmulator(tmp_path_factory.mktemp("ledgers"), catalog_dir=CATALOG_DIR) as emu:
        yield emu


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> LocalBackend:
    return LocalBackend(
        base_dir=tmp_path_factory.mktemp("episodes"),
        host_env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
    )


def assert_usage_matches_truth(episode: CliEpisode) -> None:
    truth = episode.truth()
    report = episode.read_records()
    assert report.vector == truth, f"reader {report.vector} != truth {truth}\n{episode.describe()}"
    assert episode.own_usage() == truth, (
        f"the CLI's own usage {episode.own_usage()} != truth {truth}"
    )
    billed = [r for r in episode.rows() if r.billed]
    assert report.api_calls is not None and report.api_calls <= len(billed)


@pytest.mark.parametrize("task_id", sorted(TASKS))
@pytest.mark.parametrize("cli", CLIS)
def test_scripted_solution_passes_and_wrong_variant_fails(
    emulator: ProviderEmulator, backend: LocalBackend, cli: Cli, task_id: str
) -> None:
    task: TaskEntry = TASKS[task_id]
    for variant, probability in (("correct", 0.0), ("wrong", 1.0)):
        episode = run_cli_episode(
            emulator, backend, cli, task, seed=3, wrong_probability=probability
        )
        checks = episode.grade()
        assert checks and all(c.passed is not None for c in checks), checks
        passed = all(c.passed for c in checks)
        assert passed is (variant == "correct"), f"{variant}: {checks}\n{episode.describe()}"
        rows = episode.rows()
        assert rows[-1].turn is not None and rows[-1].turn.action == "final-answer"
        assert {r.turn.variant for r in rows if r.turn} == {variant}
        assert_usage_matches_truth(episode)
        backend.cleanup(episode.prepared)


def tools_called(trace: Path) -> list[str]:
    """The tools/call requests the intervention received (its TOKEN_OPTIMIZER_TRACE)."""
    if not trace.exists():
        return []
    lines = [json.loads(e["line"]) for e in map(json.loads, trace.read_text().splitlines())]
    return [m["params"]["name"] for m in lines if m.get("method") == "tools/call"]


def _workspace_files(episode: CliEpisode) -> dict[str, str]:
    return {
        p.relative_to(episode.workspace).as_posix(): p.read_text()
        for p in episode.workspace.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


# Long enough that the reference intervention previews them (600 cl100k tokens by default).
PADDING = "".join(
    f"# note {i}: totals are computed in cents and rounded half-even at the end\n"
    for i in range(60)
)


@pytest.fixture(scope="module")
def big_catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The catalog with billing-app's modules padded (fixture and solution alike), so each
    file refactor-rename-total edits comes back as a preview the model must expand."""
    root = tmp_path_factory.mktemp("catalog") / "catalog"
    shutil.copytree(CATALOG_DIR, root)
    for tree in ("fixtures", "solutions"):
        for module in (root / tree / "billing-app" / "billing").glob("*.py"):
            if module.name != "__init__.py":
                module.write_text(module.read_text() + PADDING)
    return root


@pytest.fixture(scope="module")
def big_emulator(tmp_path_factory: pytest.TempPathFactory, big_catalog: Path):  # type: ignore[no-untyped-def]
    with ProviderEmulator(tmp_path_factory.mktemp("big-ledgers"), catalog_dir=big_catalog) as emu:
        yield emu


@pytest.mark.parametrize("cli", CLIS)
def test_treated_arm_reaches_the_intervention_and_the_baseline_cannot(
    big_emulator: ProviderEmulator, big_catalog: Path, backend: LocalBackend, cli: Cli
) -> None:
    task = TASKS["refactor-rename-total"]
    episodes = {
        arm: run_cli_episode(
            big_emulator,
            backend,
            cli,
            task,
            seed=5,
            arm=arm,
            with_mcp=True,
            preview_tokens=600,
            catalog=big_catalog,
        )
        for arm in ("optimizer", "baseline")
    }
    treated, baseline = episodes["optimizer"], episodes["baseline"]
    actions = [r.turn.action for r in treated.rows() if r.turn]
    prefix = "mcp__token-optimizer__" if cli == "claude" else "mcp__token_optimizer/"
    search = "ToolSearch" if cli == "claude" else "tool_search"
    assert actions[0] == search, actions  # the CLI defers MCP tools behind its tool search
    edited = [c for c in task_changes(big_catalog, task.id) if c]
    assert actions.count(f"{prefix}expand") == len(edited), actions  # each edited file
    assert actions.count(f"{prefix}read_file") >= len(edited)
    # the intervention's own trace: one tools/call per MCP call the model made; a ledger row
    # per preview and per expansion (the edited files are all previewed, then expanded)
    calls = tools_called(treated.state / TRACE)
    assert len(calls) == sum(a.startswith(prefix) for a in actions)
    ledger = [
        json.loads(line) for line in (treated.state / "mcp-ledger.jsonl").read_text().splitlines()
    ]
    assert sorted(r["kind"] for r in ledger if r["tool"] == "expand") == ["expansion"] * len(edited)
    assert all(c.passed for c in treated.grade())
    assert_usage_matches_truth(treated)
    # the baseline's server exposes no tools: nothing deferred, nothing called
    base_actions = [r.turn.action for r in baseline.rows() if r.turn]
    assert not any(prefix in a or a == search for a in base_actions), base_actions
    assert not any(prefix.rstrip("/_") in name for r in baseline.rows() for name in r.tools_offered)
    assert tools_called(baseline.state / TRACE) == []  # started, offering nothing
    assert not (baseline.state / "mcp-ledger.jsonl").exists()
    assert all(c.passed for c in baseline.grade())
    assert _workspace_files(treated) == _workspace_files(baseline)


def task_changes(catalog: Path, task_id: str) -> list[str]:
    from pairlab.adapters.emulator.catalog_scripts import task_script

    return [c.path for c in task_script(task_id, catalog).changes if c.before is not None]
