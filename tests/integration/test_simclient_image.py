"""The simclient image: built without a registry, runs as uid 1000 with no network.

Builds ``pairlab/simclient:<version>`` with containers/build-images.sh when the
tag is missing (debootstrap base + ``docker build --pull=false``).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pairlab_simclient import __version__

from pairlab.adapters.images.registry import local_tag
from tests.support import REPO_ROOT, require

pytestmark = pytest.mark.docker

IMAGE = f"pairlab/simclient:{__version__}"  # run as local_tag(IMAGE): the prefix built


def _docker() -> Any:
    try:
        import docker

        client = docker.from_env()
        client.ping()
    except Exception:
        require(False, "Docker daemon reachable")
        raise
    return client


@pytest.fixture(scope="module")
def client() -> Any:
    docker_client = _docker()
    build = subprocess.run(
        ["bash", str(REPO_ROOT / "containers" / "build-images.sh")],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    yield docker_client
    docker_client.close()


def _run(client: Any, command: list[str], **kw: Any) -> tuple[int, str, str]:
    container = client.containers.run(
        local_tag(IMAGE),
        command,
        user="1000:1000",
        network_mode="none",
        detach=True,
        labels={"pairlab.test": "test_simclient_image"},
        **kw,
    )
    try:
        status = container.wait(timeout=120)
        out = container.logs(stdout=True, stderr=False).decode()
        err = container.logs(stdout=False, stderr=True).decode()
    finally:
        container.remove(force=True)
    return int(status["StatusCode"]), out, err


def test_version_as_uid_1000_without_network(client: Any) -> None:
    code, out, _ = _run(client, ["simclient", "--version"])
    assert code == 0 and out == f"simclient {__version__}\n"
    code, out, _ = _run(client, ["sh", "-c", "id -u; echo $HOME; pwd"])
    assert out.split() == ["1000", "/home/agent", "/workspace"]


def test_exec_writes_records_truth_and_quota(client: Any, tmp_path: Path) -> None:
    mounts = {name: tmp_path / name for name in ("home", "state", "account", "workspace")}
    for path in mounts.values():
        path.mkdir()
        path.chmod(0o777)
    env = {
        "HOME": "/home/agent",
        "CODEX_HOME": "/home/agent/.codex",
        "TOKEN_OPTIMIZER_EXPERIMENT_ARM": "optimizer",
        "PAIRLAB_SEED": "7",
        "PAIRLAB_EPISODE_ID": "run1:median-stats:0:optimizer",
        "PAIRLAB_TASK_ID": "median-stats",
        "PAIRLAB_STATE_DIR": "/state",
        "PAIRLAB_WORKSPACE": "/workspace",
        "PAIRLAB_SIM_ACCOUNT_DIR": "/account",
    }
    volumes = {
        str(mounts["home"]): {"bind": "/home/agent", "mode": "rw"},
        str(mounts["state"]): {"bind": "/state", "mode": "rw"},
        str(mounts["account"]): {"bind": "/account", "mode": "rw"},
        str(mounts["workspace"]): {"bind": "/workspace", "mode": "rw"},
    }
    code, out, err = _run(
        client,
        ["simclient", "exec", "--format", "codex", "Fix the median."],
        environment=env,
        volumes=volumes,
    )
    assert code == 0, err
    assert "simclient: found hooks=[] mcp_servers=[] rules=[]" in err.splitlines()
    assert out.splitlines()[-1].startswith("FINAL ANSWER: ")
    truth = json.loads((mounts["state"] / "simclient-truth.json").read_text())
    assert truth["arm"] == "optimizer" and truth["api_calls"] >= 1
    rollouts = list((mounts["home"] / ".codex" / "sessions").rglob("rollout-*.jsonl"))
    assert len(rollouts) == 1 and truth["session_id"] in rollouts[0].name
    assert (mounts["state"] / "mcp-ledger.jsonl").stat().st_size > 0
    quota = json.loads((mounts["account"] / "quota.json").read_text())
    assert quota["windows"]["five-hour"]["used_tokens"] > 0
