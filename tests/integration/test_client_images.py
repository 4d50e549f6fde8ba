"""The real-CLI images: built with no registry from the wheels uv.lock pins, and the real CLIs
in them start the reference intervention they carry.

The images are (re)built once per module by pairlab.adapters.images.clients (an unchanged
input hash reuses the existing tag in about a second). Containers run as uid 1000 with
``--network none`` unless a test says otherwise, and are labelled ``pairlab.test``.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pairlab.adapters.images.clients import CLIENT_IMAGES, build_client_image
from pairlab.core.accounting.ledger_rules import qualify_row
from pairlab.core.accounting.tokenizer import load_token_counter
from tests.integration.backend_fixtures import docker_client_or_skip
from tests.intervention_wiring import (
    claude_arm_args,
    codex_arm_args,
    write_claude_user_config,
)
from tests.support import REPO_ROOT
from tests.unit.test_intervention_replay import big_py, load_trace

pytestmark = pytest.mark.docker

LABEL = "pairlab.test=test_client_images"


@pytest.fixture(scope="module")
def images() -> Iterator[dict[str, str]]:
    docker_client_or_skip().close()
    base = subprocess.run(
        ["bash", str(REPO_ROOT / "containers/base-image/build.sh")],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert base.returncode == 0, base.stderr[-2000:]
    yield {name: build_client_image(name).alias for name in CLIENT_IMAGES}


def docker_run(
    image: str,
    argv: list[str],
    *,
    mounts: dict[Path, str] | None = None,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
    workdir: str | None = None,
) -> subprocess.CompletedProcess[str]:
    cmd = ["docker", "run", "--rm", "--label", LABEL, "--network", "none", "-u", "1000:1000"]
    if stdin is not None:
        cmd.append("-i")
    for host, inside in (mounts or {}).items():
        cmd += ["-v", f"{host}:{inside}"]
    for key, value in (env or {}).items():
        cmd += ["-e", f"{key}={value}"]
    if workdir:
        cmd += ["-w", workdir]
    return subprocess.run(
        [*cmd, image, *argv], input=stdin, capture_output=True, text=True, timeout=300, check=False
    )


def episode_dirs(tmp_path: Path) -> dict[str, Path]:
    dirs = {name: tmp_path / name for name in ("home", "state", "workspace")}
    for path in (*dirs.values(), dirs["home"] / ".claude", dirs["home"] / ".codex"):
        path.mkdir(parents=True, exist_ok=True)
        path.chmod(0o777)
    return dirs


EPISODE_ENV = {
    "HOME": "/home/agent",
    "CLAUDE_CONFIG_DIR": "/home/agent/.claude",
    "CODEX_HOME": "/home/agent/.codex",
    "TOKEN_OPTIMIZER_EXPERIMENT_ARM": "optimizer",
    "PAIRLAB_STATE_DIR": "/state",
    "PAIRLAB_WORKSPACE_ROOT": "/workspace",
    "PAIRLAB_WORKSPACE": "/workspace",
    "TOKEN_OPTIMIZER_TRACE": "/state/mcp-trace.jsonl",
}


def _mounts(dirs: dict[str, Path]) -> dict[Path, str]:
    return {dirs["home"]: "/home/agent", dirs["state"]: "/state", dirs["workspace"]: "/workspace"}


def _trace(dirs: dict[str, Path]) -> list[tuple[str, Any]]:
    path = dirs["state"] / "mcp-trace.jsonl"
    assert path.exists(), "the server never started"
    return [
        (e["dir"], json.loads(e["line"])) for e in map(json.loads, path.read_text().splitlines())
    ]


def _offered(conversation: list[tuple[str, Any]]) -> list[str]:
    (listing,) = [m for d, m in conversation if d == "out" and "tools" in m.get("result", {})]
    return [t["name"] for t in listing["result"]["tools"]]


def test_the_pinned_clis_run_as_uid_1000(images: dict[str, str]) -> None:
    import claude_agent_sdk

    bundled = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude.version"
    claude = docker_run(images["claude"], ["claude", "--version"], env={"HOME": "/tmp"})
    assert claude.returncode == 0 and claude.stdout.strip() == bundled.read_text().strip()
    codex = docker_run(images["codex"], ["codex", "--version"])
    assert codex.returncode == 0 and codex.stdout.strip() == "codex-cli 0.163.0"
    for image in images.values():
        probe = docker_run(
            image,
            ["sh", "-c", 'id -u; id -g; python3 -c "import sys; print(sys.version_info[:2])"'],
        )
        assert probe.stdout.split("\n")[:3] == ["1000", "1000", "(3, 11)"], probe
        # graders' python3 does not see the intervention's packages
        isolated = docker_run(image, ["python3", "-c", "import tiktoken"])
        assert isolated.returncode == 1 and "No module named 'tiktoken'" in isolated.stderr
        version = docker_run(image, ["token-optimizer", "--version"])
        assert version.stdout.strip() == "token-optimizer 1.0.0"


def test_tags_name_the_cli_version_and_the_inputs(images: dict[str, str]) -> None:
    again = build_client_image("codex")
    assert again.reused and again.seconds < 30
    inspect = subprocess.run(
        ["docker", "image", "inspect", again.alias, again.tag],
        capture_output=True,
        text=True,
        check=True,
    )
    alias, tagged = json.loads(inspect.stdout)
    assert alias["Id"] == tagged["Id"]
    labels = tagged["Config"]["Labels"]
    assert labels["pairlab.image"] == "codex" and labels["pairlab.cli_version"] == "0.163.0"
    assert again.tag == f"pairlab/codex:0.163.0-{labels['pairlab.inputs']}"


def test_claude_in_its_image_starts_the_intervention(
    images: dict[str, str], tmp_path: Path
) -> None:
    dirs = episode_dirs(tmp_path)
    write_claude_user_config(dirs["home"] / ".claude")
    (dirs["home"] / ".claude" / ".claude.json").chmod(0o666)
    listed = docker_run(
        images["claude"], ["claude", "mcp", "list"], mounts=_mounts(dirs), env=EPISODE_ENV
    )
    assert "token-optimizer: token-optimizer mcp - ✔ Connected" in listed.stdout, listed
    (dirs["state"] / "mcp-trace.jsonl").unlink()
    quiet = {
        **EPISODE_ENV,
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
        "ANTHROPIC_API_KEY": "sk-ant-dummy",
        "CLAUDE_CODE_MAX_RETRIES": "0",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
    }
    argv = ["claude", "-p", "hi", "--output-format", "json", "--setting-sources", ""]
    episode = docker_run(
        images["claude"],
        [*argv, *claude_arm_args(), "--dangerously-skip-permissions"],
        mounts=_mounts(dirs),
        env=quiet,
        workdir="/workspace",
    )
    assert json.loads(episode.stdout)["is_error"] is True, episode  # no model here
    conversation = _trace(dirs)
    init = next(m for d, m in conversation if d == "in" and m.get("method") == "initialize")
    assert init["params"]["clientInfo"]["name"] == "claude-code"
    assert _offered(conversation) == ["read_file", "expand"]
    logs = list(dirs["home"].glob(".cache/claude-cli-nodejs/*/mcp-logs-token-optimizer/*.jsonl"))
    assert logs, "no MCP log"
    assert "Successfully connected (transport: stdio)" in logs[0].read_text()


def test_codex_in_its_image_starts_the_intervention(images: dict[str, str], tmp_path: Path) -> None:
    dirs = episode_dirs(tmp_path)
    argv = [
        "codex",
        "exec",
        "--skip-git-repo-check",
        "--ignore-user-config",
        "--json",
        "--dangerously-bypass-approvals-and-sandbox",
        "--disable",
        "plugins",
        "--disable",
        "unbounded_connection_retries",
        "-m",
        "gpt-5.5",
        "-c",
        'model_provider="local"',
        "-c",
        'model_providers.local={name="local",base_url="http://127.0.0.1:9/v1",wire_api="responses"}',
        *codex_arm_args(),
        "hi",
    ]
    run = docker_run(
        images["codex"], argv, mounts=_mounts(dirs), env=EPISODE_ENV, workdir="/workspace"
    )
    assert run.returncode == 1 and '"type":"turn.failed"' in run.stdout, run
    conversation = _trace(dirs)
    init = next(m for d, m in conversation if d == "in" and m.get("method") == "initialize")
    assert init["params"]["clientInfo"] == {
        "name": "codex-mcp-client",
        "title": "Codex",
        "version": "0.163.0",
    }
    assert _offered(conversation) == ["read_file", "expand"]


def test_the_server_in_the_image_measures_what_the_host_measures(
    images: dict[str, str], tmp_path: Path
) -> None:
    """The recorded Codex conversation, replayed into token-optimizer inside the codex image:
    the rows qualify and their cl100k counts equal the host's."""
    dirs = episode_dirs(tmp_path)
    (dirs["workspace"] / "src").mkdir()
    (dirs["workspace"] / "src" / "big.py").write_text(big_py())
    lines = [e["line"] for e in load_trace("codex-0.163.0.trace.jsonl") if e["dir"] == "in"]
    run = docker_run(
        images["codex"],
        ["token-optimizer", "mcp"],
        mounts=_mounts(dirs),
        env=EPISODE_ENV,
        stdin="\n".join(lines) + "\n",
        workdir="/workspace",
    )
    assert run.returncode == 0, run.stderr
    replies = [json.loads(line) for line in run.stdout.splitlines()]
    preview = replies[2]["result"]["content"][0]["text"]
    rows = [
        json.loads(line) for line in (dirs["state"] / "mcp-ledger.jsonl").read_text().splitlines()
    ]
    assert [r["rpc_id"] for r in rows] == ["call_3", "call_6"]
    assert all(qualify_row(r).is_qualified for r in rows)
    counter = load_token_counter()
    assert rows[0]["before_tokens"] == counter.count(big_py())
    assert rows[0]["returned_tokens"] == counter.count(preview)
