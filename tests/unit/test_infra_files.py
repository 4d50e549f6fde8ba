"""The infra/ files: deployment file, work-pool templates, zombie automation, compose file.

The templates are checked against the shape ``prefect work-pool create
--base-job-template`` accepts ({job_configuration, variables}, every
``{{ placeholder }}`` declared as a variable) and against Prefect's own default
templates for the same worker types; the compose file is validated by the
docker compose binary itself (plugin or v1).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from flows.dispatch_params import DispatchParams
from flows.evidence.dispatch import DEFAULT_ZOMBIE_AFTER_S, PAIR_FLOW_NAME, zombie_automation
from flows.params import EvidenceEvalParams
from tests.support import REPO_ROOT, require

INFRA = REPO_ROOT / "infra"
PREFECT = str(Path(sys.executable).parent / "prefect")
PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
DEPLOYMENTS = {
    "evidence-eval": "flows/evidence_eval.py:evidence_eval",
    "run-pair": "flows/evidence/run_pair.py:run_pair_flow",
    "certify-clients": "flows/certify_clients.py:certify_clients",
    "compare-artifact": "flows/compare_artifact.py:compare_artifact",
    "audit-savings": "flows/audit_savings.py:audit_savings",
    "canary-trial": "flows/canary/trial.py:canary_trial",
}


def _placeholders(node: Any) -> set[str]:
    if isinstance(node, str):
        return set(PLACEHOLDER.findall(node))
    if isinstance(node, dict):
        return set().union(*(_placeholders(v) for v in node.values())) if node else set()
    if isinstance(node, list):
        return set().union(*(_placeholders(v) for v in node)) if node else set()
    return set()


def _deployment_file() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((INFRA / "prefect.yaml").read_text(encoding="utf-8"))
    return data


def test_deployment_file_names_every_deployment_and_its_entrypoint() -> None:
    data = _deployment_file()
    found = {d["name"]: d["entrypoint"] for d in data["deployments"]}
    assert found == DEPLOYMENTS
    for entrypoint in found.values():
        path, func = entrypoint.split(":")
        assert f"def {func}(" in (REPO_ROOT / path).read_text(encoding="utf-8"), entrypoint
    assert all(d["work_pool"]["name"] == "pairlab" for d in data["deployments"])
    steps = data["pull"][0]["prefect.deployments.steps.set_working_directory"]
    assert steps["directory"] == "{{ $PAIRLAB_REPO_DIR }}"


def test_canary_schedule_starts_inactive() -> None:
    canary = next(d for d in _deployment_file()["deployments"] if d["name"] == "canary-trial")
    assert canary["schedules"] and all(s["active"] is False for s in canary["schedules"])


def test_pool_eval_parameters_are_valid_and_dispatch_to_the_pair_deployment() -> None:
    deployments = {d["name"]: d for d in _deployment_file()["deployments"]}
    params = EvidenceEvalParams.model_validate(deployments["evidence-eval"]["parameters"]["params"])
    assert params.dispatch.mode == "work-pool"
    flow_name, deployment_name = params.dispatch.deployment.split("/")
    assert flow_name == PAIR_FLOW_NAME and deployment_name in deployments
    assert Path(params.work_dir).is_absolute()  # shared storage, never relative to a worker's cwd


def test_episode_limit_comes_from_the_parameter_else_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PAIRLAB_EPISODE_LIMIT", raising=False)
    assert DispatchParams().resolved_limit() is None
    monkeypatch.setenv("PAIRLAB_EPISODE_LIMIT", "pairlab-episodes-team-a")
    assert DispatchParams().resolved_limit() == "pairlab-episodes-team-a"
    assert (
        DispatchParams(episode_limit="pairlab-episodes-b").resolved_limit() == "pairlab-episodes-b"
    )
    with pytest.raises(ValueError):
        DispatchParams(lease_s=10)  # the server refuses leases under 60 s


@pytest.mark.parametrize("kind", ["docker", "kubernetes"])
def test_work_pool_template_shape(kind: str) -> None:
    template = json.loads((INFRA / "work-pools" / f"{kind}.json").read_text(encoding="utf-8"))
    assert set(template) == {"job_configuration", "variables"}
    variables = template["variables"]
    assert variables["type"] == "object"
    declared = set(variables["properties"])
    used = _placeholders(template["job_configuration"])
    assert used and used <= declared, used - declared
    for name, spec in variables["properties"].items():
        assert isinstance(spec, dict), name
        if "enum" in spec and "default" in spec:
            assert spec["default"] in spec["enum"], name
    assert variables["properties"]["image"]["default"] == "pairlab/worker:latest"


@pytest.mark.prefect
@pytest.mark.parametrize("kind", ["docker", "kubernetes"])
def test_work_pool_template_keeps_everything_of_prefects_default(
    kind: str, prefect_server: Any
) -> None:
    # Prefect's own CLI against the session's Prefect server (without one, each call starts
    # an ephemeral API server: minutes on a loaded 2-core machine).
    proc = subprocess.run(
        [PREFECT, "work-pool", "get-default-base-job-template", "--type", kind],
        cwd=REPO_ROOT,
        env=prefect_server.env,
        capture_output=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, f"prefect's default {kind} base job template: {proc.stderr}"
    default = json.loads(proc.stdout)
    ours = json.loads((INFRA / "work-pools" / f"{kind}.json").read_text(encoding="utf-8"))
    assert set(default["job_configuration"]) <= set(ours["job_configuration"])
    assert set(default["variables"]["properties"]) <= set(ours["variables"]["properties"])


def test_zombie_automation_file_matches_the_one_the_dispatcher_creates() -> None:
    from prefect.events.schemas.automations import AutomationCore

    text = (INFRA / "automations" / "crash-zombie-pair-runs.yaml").read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    assert data == zombie_automation(DEFAULT_ZOMBIE_AFTER_S)
    automation = AutomationCore.model_validate(data)
    assert automation.trigger.within.total_seconds() == DEFAULT_ZOMBIE_AFTER_S  # type: ignore[union-attr]


def _compose_command() -> list[str] | None:
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, check=False)
        if probe.returncode == 0:
            return ["docker", "compose"]
    legacy = shutil.which("docker-compose")
    return [legacy] if legacy else None


def test_compose_file_is_valid_and_has_the_full_stack() -> None:
    command = _compose_command()
    require(command is not None, "docker compose (plugin) or docker-compose (v1)")
    assert command is not None
    proc = subprocess.run(
        [*command, "-f", str(INFRA / "compose.yaml"), "config"],
        capture_output=True,
        timeout=120,
        check=False,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/")},
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    config = yaml.safe_load(proc.stdout)
    services = config["services"]
    nodes = ("garage1", "garage2", "garage3")
    assert {"postgres", "prefect-server", "worker", "garage-init", "deploy", *nodes} <= set(
        services
    )
    for name in ("postgres", "prefect-server", "worker", *nodes):
        assert "healthcheck" in services[name], name
    # only locally built images (containers/images.yaml), no registry
    assert all(s["image"].startswith("pairlab/") for s in services.values()), services
    assert all("build" not in s for s in services.values())
    assert (
        "postgresql+asyncpg://"
        in services["prefect-server"]["environment"]["PREFECT_API_DATABASE_CONNECTION_URL"]
    )
    assert services["prefect-server"]["environment"]["PREFECT_SERVER_UI_V2_ENABLED"] == "false"
    for node in nodes:
        assert services[node]["environment"]["GARAGE_REPLICATION_FACTOR"] == "3"
    init = services["garage-init"]
    assert init["environment"]["GARAGE_NODES"] == ",".join(nodes)
    worker = services["worker"]
    # the S3 key garage-init imports is the one the workers get, as standard AWS variables
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        assert worker["environment"][var] == init["environment"][var]
    assert worker["environment"]["AWS_ENDPOINT_URL_S3"] == "http://garage1:3900"
    assert worker["depends_on"]["garage-init"]["condition"] == "service_completed_successfully"
    mounts = [
        f"{v['source']}:{v['target']}" if isinstance(v, dict) else str(v) for v in worker["volumes"]
    ]
    assert any("/var/run/docker.sock" in m for m in mounts)
    assert any("/srv/pairlab/work:/srv/pairlab/work" in m for m in mounts)  # same path both sides
    assert {"postgres-data", "garage1-data", "garage2-data", "garage3-data"} <= set(
        config["volumes"]
    )
    dockerfile = (REPO_ROOT / "containers" / "worker" / "Dockerfile").read_text(encoding="utf-8")
    assert "ARG BASE_IMAGE" in dockerfile and "uv sync --frozen" in dockerfile
