"""``pairlab certify``: the simulator passes; broken profiles and broken isolation fail loudly."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from pairlab.adapters.certify.sim import certify_profiles
from tests.integration.backend_fixtures import simclient_image  # noqa: F401  (session fixture)
from tests.support import PROFILES_DIR

pytestmark = pytest.mark.timeout(300)


def certify_cli(*args: str) -> tuple[int, dict[str, Any]]:
    """``pairlab certify --json ...`` in-process (the CLI module import costs seconds)."""
    from typer.testing import CliRunner

    from pairlab.cli import app

    result = CliRunner().invoke(app, ["certify", "--json", *args])
    return result.exit_code, json.loads(result.stdout)


def copy_profiles(tmp_path: Path, edit: Any) -> Path:
    """runner_profiles/ copied, with ``edit(sim_profile_dict)`` applied to sim.yaml."""
    target = tmp_path / "profiles"
    shutil.copytree(PROFILES_DIR, target)
    sim = target / "sim.yaml"
    data = yaml.safe_load(sim.read_text())
    edit(data)
    sim.write_text(yaml.safe_dump(data))
    return target


def checks_of(report: dict[str, Any], profile: str) -> dict[str, dict[str, Any]]:
    (entry,) = [p for p in report["profiles"] if p["profile"] == profile]
    return {c["name"]: c for c in entry["checks"]} | {"_status": {"passed": entry["status"]}}


def test_sim_profile_passes_with_isolation_proven_locally() -> None:
    code, report = certify_cli("--profile", "sim", "--backend", "local")
    assert code == 0 and report["passed"] is True
    (entry,) = report["profiles"]
    assert entry["status"] == "passed" and entry["client"] == "sim" and entry["version"] == "1.0.0"
    checks = {c["name"]: c for c in entry["checks"]}
    assert {
        "schema",
        "command",
        "version",
        "isolation-baseline",
        "isolation-optimizer",
        "isolation-full",
    } <= set(checks)
    assert all(c["passed"] for c in entry["checks"])
    assert "nothing" in checks["isolation-baseline"]["detail"]
    assert "token-optimizer" in checks["isolation-optimizer"]["detail"]


@pytest.mark.parametrize("name", ["gemini", "copilot"])
def test_clients_that_cannot_run_here_are_never_passed_and_certify_says_why(name: str) -> None:
    report = certify_profiles(backend_name="local", only=name)
    (entry,) = report.profiles
    assert entry.status == "not-live-certified" and report.passed is True
    availability = next(c for c in entry.checks if c.name == "availability")
    assert availability.detail.startswith("not certified here: npm-only")
    assert "npm registry is not reachable" in availability.detail


def test_missing_baseline_args_fail_loudly(tmp_path: Path) -> None:
    profiles = copy_profiles(tmp_path, lambda d: d["arm_args"].pop("baseline"))
    code, report = certify_cli("--profiles-dir", str(profiles))
    assert code == 1 and report["passed"] is False
    checks = checks_of(report, "sim")
    assert checks["_status"]["passed"] == "failed"
    assert checks["schema"]["passed"] is False
    assert "arm_args.baseline" in checks["schema"]["detail"]
    assert "missing-baseline-args" in checks["schema"]["detail"]


def test_missing_baseline_isolation_fails_loudly(tmp_path: Path) -> None:
    profiles = copy_profiles(tmp_path, lambda d: d.pop("baseline_isolation"))
    code, report = certify_cli("--profiles-dir", str(profiles), "--profile", "sim")
    assert code == 1
    checks = checks_of(report, "sim")
    assert "baseline_isolation" in checks["schema"]["detail"]


def test_isolation_broken_on_purpose_fails_the_probe(tmp_path: Path) -> None:
    # Allowlisting HOME hands the agent the host user's HOME, with the planted config.
    profiles = copy_profiles(tmp_path, lambda d: d["env_allowlist"].append("HOME"))
    code, report = certify_cli("--profiles-dir", str(profiles), "--profile", "sim")
    assert code == 1 and report["passed"] is False
    checks = checks_of(report, "sim")
    assert checks["_status"]["passed"] == "failed"
    baseline = checks["isolation-baseline"]
    assert baseline["passed"] is False
    assert "pairlab-planted" in baseline["detail"]
    assert checks["schema"]["passed"] is True  # the schema cannot see this; only the probe can


def test_treated_arm_must_see_exactly_the_treatment(tmp_path: Path) -> None:
    # Allowlisting CLAUDE_CONFIG_DIR points every arm at the host's (planted) config dir:
    # treated arms then see the planted hooks/servers and lose the seeded ones.
    def leak_treated(d: dict[str, Any]) -> None:
        d["env_allowlist"].append("CLAUDE_CONFIG_DIR")

    profiles = copy_profiles(tmp_path, leak_treated)
    code, report = certify_cli("--profiles-dir", str(profiles), "--profile", "sim")
    assert code == 1
    checks = checks_of(report, "sim")
    assert checks["isolation-optimizer"]["passed"] is False
    assert "missing" in checks["isolation-optimizer"]["detail"]  # the seeded config was shadowed


@pytest.mark.docker
def test_sim_profile_passes_on_docker(simclient_image: str) -> None:  # noqa: F811
    code, report = certify_cli("--profile", "sim", "--backend", "docker")
    assert code == 0, report
    (entry,) = report["profiles"]
    assert entry["status"] == "passed"
    names = {c["name"] for c in entry["checks"]}
    assert {"image", "version", "isolation-baseline", "isolation-full"} <= names
