"""``pairlab certify --profile claude|codex`` against the real binaries and the emulator.

Both profiles pass: the baseline saw none of the planted user and project config and no
MCP server; each treated arm saw exactly the reference intervention. Then one test per
isolation flag: a profile without it fails certification, naming what leaked. Two flags
are redundant under the others here (certify says so): their tests remove the flag that
covers them too and show what each one then keeps out on its own. A third-party
intervention (``mcp-server-git``) certifies with both CLIs, its listed tools and their
token cost recorded; planted in the user's own config, it fails certify once the
isolation that keeps it out is removed.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from pairlab.adapters.clients.registry import resolve_cli
from pairlab.adapters.interventions import load_intervention
from pairlab.core.accounting.tokenizer import load_token_counter
from tests.integration.realcli_harness import require_cli
from tests.support import PROFILES_DIR, REPO_ROOT

pytestmark = [pytest.mark.realcli, pytest.mark.timeout(600)]

Edit = Callable[[dict[str, Any]], None]


def certify_cli(*args: str) -> tuple[int, dict[str, Any]]:
    from typer.testing import CliRunner

    from pairlab.cli import app

    result = CliRunner().invoke(app, ["certify", "--json", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, json.loads(result.stdout)


def entry_of(report: dict[str, Any]) -> dict[str, Any]:
    (entry,) = report["profiles"]
    return dict(entry)


def checks_of(entry: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in entry["checks"]}


def seen_in(entry: dict[str, Any], column: str) -> set[str]:
    return {row["item"] for row in entry["matrix"]["rows"] if row["seen"].get(column)}


def without_flag(*flags: list[str], allow: tuple[str, ...] = ()) -> Edit:
    """Remove each flag's args from every arm (as a user editing the profile would) and
    from the declared flags; allowlist host variables."""

    def edit(data: dict[str, Any]) -> None:
        for flag in flags:
            for arm, args in data["arm_args"].items():
                for i in range(len(args) - len(flag) + 1):
                    if args[i : i + len(flag)] == flag:
                        data["arm_args"][arm] = args[:i] + args[i + len(flag) :]
                        break
            declared = data["baseline_isolation"]["flags"]
            data["baseline_isolation"]["flags"] = [f for f in declared if f["args"] != flag]
        if not data["arm_args"]["baseline"]:  # a profile needs baseline arm args: move the
            first = data["args"].pop(0)  # first common arg to the end of every arm's (the
            # same command line; a treated arm's generated wiring stays whole before it)
            data["arm_args"] = {arm: [*args, first] for arm, args in data["arm_args"].items()}
        data["env_allowlist"] = [*data["env_allowlist"], *allow]

    return edit


def certify_edited(
    tmp_path: Path, name: str, edit: Edit, *extra: str
) -> tuple[int, dict[str, Any]]:
    require_cli(name)  # type: ignore[arg-type]
    target = tmp_path / "profiles"
    shutil.copytree(PROFILES_DIR, target)
    path = target / f"{name}.yaml"
    data = yaml.safe_load(path.read_text())
    edit(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return certify_cli("--profiles-dir", str(target), "--profile", name, *extra)


def baseline_leaks(entry: dict[str, Any]) -> set[str]:
    return seen_in(entry, "baseline")


@pytest.mark.parametrize("name", ["claude", "codex"])
def test_the_real_cli_profile_passes_and_each_arm_saw_exactly_its_intervention(
    name: str,
) -> None:
    require_cli(name)  # type: ignore[arg-type]
    code, report = certify_cli("--profile", name)
    entry = entry_of(report)
    assert code == 0 and entry["status"] == "passed", json.dumps(entry["checks"], indent=1)
    assert entry["version"] == resolve_cli(name).version  # type: ignore[arg-type]
    checks = checks_of(entry)
    assert checks["cli"]["passed"] and resolve_cli(name).wheel in checks["cli"]["detail"]  # type: ignore[arg-type]
    assert "nothing planted and no MCP server" in checks["isolation-baseline"]["detail"]
    matrix = entry["matrix"]
    intervention = "intervention:token-optimizer"
    assert seen_in(entry, "baseline") == set()
    for arm in ("optimizer", "retrieval", "full"):
        assert seen_in(entry, arm) == {intervention}
        assert "exactly the intervention" in checks[f"isolation-{arm}"]["detail"]
    # the control: with no isolation at all the planted config shows (the probe can see it)
    control = seen_in(entry, "no isolation (control)")
    assert len(control) >= 10 and intervention not in control
    planted = [r["item"] for r in matrix["rows"] if r["item"] != intervention]
    assert {"user", "project"} == {r["scope"] for r in matrix["rows"] if r["item"] in planted}
    declared = [c for c in checks if c.startswith("flag ")]
    assert len(declared) == {"claude": 3, "codex": 5}[name]  # + the fresh-HOME ablation
    # claim 1 (issue 18): the lifecycle events the client exposes, deterministic only
    lifecycle = entry["lifecycle"]
    assert (lifecycle["kind"], lifecycle["causalEvidence"], lifecycle["passed"]) == (
        "deterministic-verification",
        False,
        True,
    ), lifecycle
    assert lifecycle["events"]["tool-use"]["status"] == "not-exposed"
    # the tools each arm's CLI listed: Codex's deferred tools named by the results of the
    # scripted model's tool_search (issue 26 item 3), Claude's in every request
    listed = {
        t["arm"]: {n.replace("/", "__").split("__")[-1] for n in t["tools"]}
        for t in entry["listed_tools"]
    }
    assert listed["optimizer"] == {"read_file", "expand"}
    # all of them, and only them, per the server's own tools/list for each arm
    assert all((t["unlisted"], t["not_the_servers"]) == ([], []) for t in entry["listed_tools"])
    assert listed["full"] == {"read_file", "expand", "recall", "rate_finding", "wiki_write"}
    assert any(c.startswith("lifecycle (") for c in checks)


@pytest.mark.parametrize(
    ("name", "flag", "leaks"),
    [
        (
            "claude",
            ["--setting-sources", ""],
            {
                "project-settings-hooks",
                "project-local-settings-hooks",
                "project-claude-md",
                "project-local-claude-md",
                "project-rules",
                "project-skill",
                "project-command",
                "project-agent",
            },
        ),
        (
            "codex",
            ["--ignore-user-config"],
            {"project-config-mcp-server", "project-config-instructions"},
        ),
        ("codex", ["-c", "project_doc_max_bytes=0"], {"project-agents-md"}),
        (
            "codex",
            ["-c", "skills.include_instructions=false"],
            {"project-agents-skill", "project-codex-skill"},
        ),
    ],
)
def test_removing_an_isolation_flag_fails_certify_naming_what_leaked(
    tmp_path: Path, name: str, flag: list[str], leaks: set[str]
) -> None:
    code, report = certify_edited(tmp_path, name, without_flag(flag))
    entry = entry_of(report)
    assert code == 1 and entry["status"] == "failed"
    assert baseline_leaks(entry) == leaks
    detail = checks_of(entry)["isolation-baseline"]["detail"]
    assert detail.startswith("isolation broken: leaked ")
    assert all(slug in detail for slug in leaks)
    for arm in ("optimizer", "retrieval", "full"):  # treated arms leak the same, too
        assert leaks <= seen_in(entry, arm)


def test_strict_mcp_config_is_caught_once_setting_sources_no_longer_covers_it(
    tmp_path: Path,
) -> None:
    """Alone, --strict-mcp-config is redundant here (certify says so); without
    --setting-sources "" it is what keeps the workspace's .mcp.json server out."""
    code, report = certify_cli("--profile", "claude")
    strict = next(
        c for c in checks_of(entry_of(report)) if c.startswith("flag --strict-mcp-config")
    )
    assert code == 0 and "redundant here" in checks_of(entry_of(report))[strict]["detail"]
    settings = ["--setting-sources", ""]
    strict_args = ["--strict-mcp-config", "--mcp-config", '{"mcpServers":{}}']
    _, only_settings = certify_edited(tmp_path / "a", "claude", without_flag(settings))
    assert "project-mcp-json" not in baseline_leaks(entry_of(only_settings))
    code, both = certify_edited(tmp_path / "b", "claude", without_flag(settings, strict_args))
    entry = entry_of(both)
    assert code == 1 and "project-mcp-json" in baseline_leaks(entry)
    assert "pairlab-planted-project-mcp-json" in checks_of(entry)["isolation-baseline"][
        "detail"
    ] or ("project-mcp-json" in checks_of(entry)["isolation-baseline"]["detail"])


def test_ignore_rules_is_caught_once_ignore_user_config_no_longer_covers_it(tmp_path: Path) -> None:
    _, only_config = certify_edited(tmp_path / "a", "codex", without_flag(["--ignore-user-config"]))
    assert "project-rules" not in baseline_leaks(entry_of(only_config))
    code, both = certify_edited(
        tmp_path / "b", "codex", without_flag(["--ignore-user-config"], ["--ignore-rules"])
    )
    entry = entry_of(both)
    assert code == 1 and "project-rules" in baseline_leaks(entry)
    assert "project-rules" in checks_of(entry)["isolation-baseline"]["detail"]


def test_the_fresh_codex_home_is_what_keeps_the_user_agents_md_out(tmp_path: Path) -> None:
    code, report = certify_edited(tmp_path, "codex", without_flag(allow=("CODEX_HOME",)))
    entry = entry_of(report)
    assert code == 1 and baseline_leaks(entry) == {"user-agents-md"}  # the flags strip the rest


def test_claude_flags_cover_the_host_config_even_without_a_fresh_home(tmp_path: Path) -> None:
    allow = ("HOME", "CLAUDE_CONFIG_DIR")
    code, report = certify_edited(tmp_path / "a", "claude", without_flag(allow=allow))
    checks = checks_of(entry_of(report))
    # Isolation holds with the host HOME. The lifecycle checks read the CLI's transcript from
    # the episode's HOME; with the host HOME it is written elsewhere, so they rightly fail
    # (client call id missing) -- and nothing else may.
    failed = {name for name, check in checks.items() if not check["passed"]}
    assert all(name.startswith("lifecycle") for name in failed), checks
    assert all(c["passed"] for n, c in checks.items() if n.startswith("isolation")), checks
    code, report = certify_edited(
        tmp_path / "b", "claude", without_flag(["--setting-sources", ""], allow=allow)
    )
    leaks = baseline_leaks(entry_of(report))
    assert code == 1 and {"user-settings-hooks", "user-claude-md", "user-skill"} <= leaks


def test_an_mcp_server_given_before_exec_never_reaches_codex_and_certify_says_so(
    tmp_path: Path,
) -> None:
    """Measured: ``codex -c mcp_servers.X={...} exec`` starts no server. A profile that puts
    the intervention before ``exec`` fails: the treated arms never saw it."""

    def before_exec(data: dict[str, Any]) -> None:
        data["command"] = ["codex"]
        baseline = data["arm_args"]["baseline"]
        for arm, args in data["arm_args"].items():
            extra = args[len(baseline) :]  # the intervention's -c, in treated arms
            data["arm_args"][arm] = [*extra, "exec", *baseline]

    code, report = certify_edited(tmp_path, "codex", before_exec)
    entry = entry_of(report)
    assert code == 1
    checks = checks_of(entry)
    assert checks["isolation-baseline"]["passed"] is True
    for arm in ("optimizer", "retrieval", "full"):
        assert "token-optimizer) was never offered" in checks[f"isolation-{arm}"]["detail"]


@pytest.mark.docker
@pytest.mark.parametrize("name", ["claude", "codex"])
def test_the_real_cli_profile_passes_on_docker(name: str) -> None:
    from tests.integration.backend_fixtures import docker_client_or_skip

    docker_client_or_skip().close()
    code, report = certify_cli("--profile", name, "--backend", "docker")
    entry = entry_of(report)
    assert code == 0 and entry["status"] == "passed", json.dumps(entry["checks"], indent=1)
    assert entry["version"] == resolve_cli(name).version  # type: ignore[arg-type]
    checks = checks_of(entry)
    assert checks["image"]["passed"] and entry["matrix"]["columns"][-1] == "no isolation (control)"
    assert seen_in(entry, "baseline") == set()
    assert seen_in(entry, "full") == {"intervention:token-optimizer"}
    # a container never sees the host HOME: the control shows the project items only
    control = seen_in(entry, "no isolation (control)")
    assert control and all(item.startswith("project-") for item in control)


GIT = "mcp-server-git"
GIT_TOOLS = REPO_ROOT / "docs/research/third-party-mcp/tooldefs/mcp-server-git.tools.json"
OWN = "user-intervention-server"  # the certified server, planted under its name by the user


@pytest.mark.parametrize("name", ["claude", "codex"])
def test_a_third_party_intervention_certifies_with_the_tools_the_cli_listed(name: str) -> None:
    """``--intervention mcp-server-git``: the baseline sees no server, the optimizer arm
    (its only arm) exactly this one, in every request; the report records the tools the
    CLI listed and what they cost per request -- both CLIs defer MCP tools behind a tool
    search, so a request carries their names (Claude) or the server's name (Codex), and
    their definitions only once the probe's usage recipe searched them. The same server
    planted in the user's config stays out of every arm and loads without isolation."""
    require_cli(name)  # type: ignore[arg-type]
    code, report = certify_cli("--profile", name, "--intervention", GIT)
    entry = entry_of(report)
    assert code == 0 and entry["status"] == "passed", json.dumps(entry["checks"], indent=1)
    assert entry["intervention"] == load_intervention(GIT).identity.to_json()
    checks = checks_of(entry)
    assert checks["install"]["passed"] and GIT in checks["install"]["detail"]
    assert [c for c in checks if c.startswith("isolation-")] == [
        "isolation-baseline",
        "isolation-optimizer",
    ]  # retrieval and full are unsupported
    assert "no call required" in checks["isolation-optimizer"]["detail"]
    assert seen_in(entry, "baseline") == set()
    assert seen_in(entry, "optimizer") == {f"intervention:{GIT}"}
    (listed,) = entry["listed_tools"]
    costs, counter = listed["definition_tokens"], load_token_counter()
    assert (listed["arm"], listed["server"], listed["deferred"]) == ("optimizer", GIT, True)
    assert len(costs) == listed["requests"] > 0
    real = [t["name"] for t in json.loads(GIT_TOOLS.read_text())]
    assert sorted(entry["server_tools"]["optimizer"]) == sorted(real)  # its own tools/list
    # fix-median's usage recipe calls these two: the probe loads them with the CLI's search
    searched = {"git_status", "git_diff_unstaged"}
    names = {n.replace("/", "__").split("__")[-1] for n in listed["tools"]}
    assert listed["not_the_servers"] == []  # against its tools/list: nothing else named
    if name == "claude":  # the names of the server's 12 real tools, one per line
        assert names == set(real) and len(real) == 12 and listed["unlisted"] == []
        first = counter.count("\n".join(listed["tools"]))
    else:  # Codex names the server on a line of its tool_search description, and the
        # tools only once a search loaded them: the recipe's two (issue 26 item 3)
        assert names == searched and set(listed["unlisted"]) == set(real) - searched
        first = counter.count(f"- {GIT}")
    # before the search the request carries the names; from then on, the loaded definitions
    assert costs[0] == first and min(costs) == first and max(costs) > first
    assert OWN not in seen_in(entry, "baseline") | seen_in(entry, "optimizer")
    assert OWN in seen_in(entry, "no isolation (control)")


@pytest.mark.parametrize(
    ("name", "flags", "allow", "path"),
    [
        (  # --setting-sources "" alone keeps it out, too (measured): both must go
            "claude",
            [
                ["--setting-sources", ""],
                ["--strict-mcp-config", "--mcp-config", '{"mcpServers":{}}'],
            ],
            ("HOME", "CLAUDE_CONFIG_DIR"),
            ".claude/.claude.json",
        ),
        ("codex", [["--ignore-user-config"]], ("CODEX_HOME",), ".codex/config.toml"),
    ],
)
def test_the_intervention_planted_in_the_users_config_leaks_once_isolation_is_removed(
    tmp_path: Path, name: str, flags: list[list[str]], allow: tuple[str, ...], path: str
) -> None:
    """The user has the certified server in their own config: with the host HOME and
    without the flags that keep it out, the baseline loads it and certify fails (exit 1),
    naming the item; in the treated arm the arm's own wiring still wins over it."""
    edit = without_flag(*flags, allow=allow)
    code, report = certify_edited(tmp_path, name, edit, "--intervention", GIT)
    entry = entry_of(report)
    assert code == 1 and entry["status"] == "failed"
    assert OWN in baseline_leaks(entry)
    detail = checks_of(entry)["isolation-baseline"]["detail"]
    assert f"{OWN} ({path})" in detail and f"the baseline was offered {GIT}" in detail
    optimizer = checks_of(entry)["isolation-optimizer"]["detail"]
    assert "episode failed" not in optimizer and OWN not in seen_in(entry, "optimizer")
