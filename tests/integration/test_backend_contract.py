"""One contract, two backends: local processes and Docker containers behave the same.

Every test runs against both backends (the Docker ones are marked ``docker`` and
need a reachable engine). A tiny shell "agent" (``sh -c <prompt>``) stands in for
a CLI so each test controls exactly what the agent does.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pairlab.adapters.backends import EpisodeSpec, ExecutionBackend, PreparedEpisode, make_backend
from pairlab.core.schemas.profile import RunnerProfile
from tests.integration.backend_fixtures import (
    docker_client_or_skip,
    shell_profile,
    simclient_image,  # noqa: F401  (session fixture)
)

pytestmark = pytest.mark.timeout(180)

BACKENDS = ["local", pytest.param("docker", marks=pytest.mark.docker)]
DOCKER_ONLY = pytest.mark.parametrize(
    "harness", [pytest.param("docker", marks=pytest.mark.docker)], indirect=True
)
SECRET_VALUE = "s3cr3t-0f-the-test-9f1c"


class Harness:
    """Builds backends and episodes for one test; checks that nothing is left behind."""

    def __init__(self, name: str, tmp: Path, image: str | None) -> None:
        self.name = name
        self.tmp = tmp
        self.image = image
        self.fixture = tmp / "fixture"
        (self.fixture / "src").mkdir(parents=True)
        (self.fixture / "README.md").write_text("fixture\n")
        (self.fixture / "src" / "code.py").write_text("print('fixture')\n")
        self.count = 0
        self.docker = docker_client_or_skip() if name == "docker" else None

    def backend(self, host_env: dict[str, str] | None = None, **opts: Any) -> ExecutionBackend:
        if self.name == "local":
            opts.setdefault("base_dir", self.tmp / "episodes")
        return make_backend(self.name, host_env=host_env, **opts)

    def profile(self, **kw: Any) -> RunnerProfile:
        if self.image:
            kw.setdefault("image", self.image)
        return shell_profile(**kw)

    def spec(
        self,
        script: str,
        *,
        arm: str = "baseline",
        profile: RunnerProfile | None = None,
        timeout_s: float = 60,
        keep: bool = False,
        run_id: str = "contract",
    ) -> EpisodeSpec:
        self.count += 1
        pair_id = f"{run_id}:task-{self.tmp.name}:{self.count}"
        return EpisodeSpec(
            run_id=run_id,
            episode_id=f"{pair_id}:{arm}",
            pair_id=pair_id,
            task_id=f"task-{self.tmp.name}",
            arm=arm,
            prompt=script,
            profile=profile or self.profile(),
            fixture_dir=self.fixture,
            workspace_subdir="src",
            timeout_s=timeout_s,
            keep_workspace=keep,
        )

    def leftovers(self, prepared: PreparedEpisode) -> list[str]:
        """Processes, containers, volumes or directories of this episode still present."""
        episode_id = prepared.spec.episode_id
        found: list[str] = []
        if self.name == "local":
            needle = f"PAIRLAB_EPISODE_ID={episode_id}".encode()
            for entry in Path("/proc").iterdir():
                if not entry.name.isdigit():
                    continue
                try:
                    environ = (entry / "environ").read_bytes().split(b"\0")
                    state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                except OSError:
                    continue
                if needle in environ and state != "Z":
                    found.append(f"process {entry.name}")
            if prepared.root is not None and prepared.root.exists():
                found.append(f"dir {prepared.root}")
        else:
            assert self.docker is not None
            label = f"pairlab.episode_id={episode_id}"
            found += [
                f"container {c.name} ({c.status})"
                for c in self.docker.containers.list(all=True, filters={"label": label})
            ]
            found += [
                f"volume {v.name}" for v in self.docker.volumes.list(filters={"label": label})
            ]
        return found

    def running(self, prepared: PreparedEpisode) -> list[str]:
        if self.name == "local":
            return [x for x in self.leftovers(prepared) if x.startswith("process")]
        assert self.docker is not None
        label = f"pairlab.episode_id={prepared.spec.episode_id}"
        return [c.name for c in self.docker.containers.list(filters={"label": label})]


@pytest.fixture(params=BACKENDS)
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    image = request.getfixturevalue("simclient_image") if request.param == "docker" else None
    yield Harness(request.param, tmp_path, image)


def run_episode(
    backend: ExecutionBackend, spec: EpisodeSpec, dest: Path | None = None
) -> tuple[Any, Any, PreparedEpisode]:
    prepared = backend.prepare(spec)
    try:
        outcome = backend.run(prepared)
        collected = backend.collect(prepared, dest) if dest is not None else None
    finally:
        backend.cleanup(prepared)
    return outcome, collected, prepared


MARKER_WRITER = textwrap.dedent(
    """
    echo "left by $PAIRLAB_EPISODE_ID" > "$PAIRLAB_GRAPH_DIR/marker"
    echo state > "$PAIRLAB_STATE_DIR/marker"
    echo home > "$HOME/marker"
    echo ws > marker-in-workspace
    test -f "$CLAUDE_CONFIG_DIR/settings.json" && echo "treated-config-present"
    echo done
    """
)

MARKER_READER = textwrap.dedent(
    """
    for f in "$PAIRLAB_GRAPH_DIR/marker" "$PAIRLAB_STATE_DIR/marker" "$HOME/marker" marker-in-workspace \
             "$CLAUDE_CONFIG_DIR/settings.json"; do
      test -e "$f" && echo "SEEN $f"
    done
    ls -A "$HOME" "$CLAUDE_CONFIG_DIR" | tr '\\n' ' '
    echo
    pwd
    """
)


def test_fresh_state_between_episodes(harness: Harness, tmp_path: Path) -> None:
    seed = tmp_path / "seed"
    (seed / ".claude").mkdir(parents=True)
    (seed / ".claude" / "settings.json").write_text(json.dumps({"mcpServers": {"opt": {}}}))
    profile = harness.profile(home_seed=seed)
    backend = harness.backend()

    treated, _, _ = run_episode(
        backend, harness.spec(MARKER_WRITER, arm="optimizer", profile=profile)
    )
    assert treated.exit_code == 0, treated.stderr
    assert "treated-config-present" in treated.stdout

    baseline, _, prepared = run_episode(backend, harness.spec(MARKER_READER, profile=profile))
    assert baseline.exit_code == 0, baseline.stderr
    assert "SEEN" not in baseline.stdout  # no marker, and no treatment config in the baseline
    assert baseline.stdout.splitlines()[-1].endswith("/src")  # the task's workspace subdir
    assert "marker" not in baseline.stdout
    assert harness.leftovers(prepared) == []


def test_timeout_kills_runaway_and_sigterm_ignoring_children(harness: Harness) -> None:
    script = textwrap.dedent(
        """
        (trap '' TERM; while :; do sleep 1; done) &
        if command -v setsid >/dev/null; then setsid sh -c 'trap "" TERM; while :; do sleep 1; done' & fi
        trap '' TERM
        echo started
        while :; do :; done
        """
    )
    backend = harness.backend()
    spec = harness.spec(script, timeout_s=1.5)
    prepared = backend.prepare(spec)
    try:
        outcome = backend.run(prepared)
        assert outcome.timed_out is True
        assert outcome.exit_code is None
        assert outcome.crashed is False
        assert "started" in outcome.stdout
        assert outcome.latency_ms is not None and outcome.latency_ms >= 1500
        assert harness.running(prepared) == []  # nothing runs after run() returns
    finally:
        backend.cleanup(prepared)
    assert harness.leftovers(prepared) == []


def test_crash_is_an_outcome_with_separate_streams(harness: Harness) -> None:
    backend = harness.backend()
    outcome, _, prepared = run_episode(
        backend, harness.spec("echo to-stdout; echo to-stderr >&2; exit 3")
    )
    assert outcome.exit_code == 3
    assert outcome.crashed is True and outcome.timed_out is False and outcome.error is None
    assert outcome.stdout.strip() == "to-stdout"
    assert outcome.stderr.strip() == "to-stderr"
    assert outcome.started_at is not None and outcome.ended_at is not None
    assert outcome.started_at <= outcome.ended_at
    assert harness.leftovers(prepared) == []


@DOCKER_ONLY  # the local backend imposes no memory limit
def test_oom_is_an_outcome(harness: Harness) -> None:
    backend = harness.backend()
    profile = harness.profile(memory_mb=48)
    script = "python3 -c 'x = bytearray(400 * 1024 * 1024); print(len(x))'"
    outcome, _, prepared = run_episode(backend, harness.spec(script, profile=profile))
    assert outcome.oom_killed is True
    assert outcome.exit_code == 137
    assert harness.leftovers(prepared) == []


def test_environment_is_built_from_the_allowlist(harness: Harness, tmp_path: Path) -> None:
    host_env = {
        "PATH": os.environ["PATH"],
        "PAIRLAB_TEST_ALLOWED": "visible",
        "PAIRLAB_TEST_HIDDEN": "invisible",
        "PAIRLAB_TEST_SECRET": SECRET_VALUE,
    }
    profile = harness.profile(
        env_allowlist=["PATH", "PAIRLAB_TEST_ALLOWED"], secrets=["PAIRLAB_TEST_SECRET"]
    )
    backend = harness.backend(host_env=host_env)
    # the script itself must not hold the secret: it is the recorded prompt
    script = 'env > "$PAIRLAB_STATE_DIR/env.txt"; echo secret-ok'
    outcome, collected, prepared = run_episode(
        backend, harness.spec(script, profile=profile), tmp_path / "out"
    )
    assert outcome.stdout.strip() == "secret-ok"
    env_lines = (collected.dest / "state" / "env.txt").read_text().splitlines()
    names = {line.split("=", 1)[0] for line in env_lines}
    assert "PAIRLAB_TEST_ALLOWED=visible" in env_lines
    assert f"PAIRLAB_TEST_SECRET={SECRET_VALUE}" in env_lines
    assert "PAIRLAB_TEST_HIDDEN" not in names
    assert {
        "HOME",
        "TOKEN_OPTIMIZER_EXPERIMENT_ARM",
        "PAIRLAB_EPISODE_ID",
        "CLAUDE_CONFIG_DIR",
    } <= names
    # the secret reached the agent, but no record holds its value: only its name
    assert prepared.secret_names == ["PAIRLAB_TEST_SECRET"]
    assert "PAIRLAB_TEST_SECRET" not in prepared.env
    for record in (
        prepared.model_dump_json(),
        outcome.model_dump_json(),
        collected.model_dump_json(),
    ):
        assert SECRET_VALUE not in record


def test_secrets_reach_the_agent_for_its_run_only(harness: Harness, tmp_path: Path) -> None:
    """A secret variable and a secret file (a ChatGPT login's auth.json) reach the agent,
    the file in HOME with mode 600; afterwards the file is gone from HOME, never collected,
    and on Docker neither value is in the container's configuration (``docker inspect``)
    and the host directory that carried them is removed."""
    file_value = SECRET_VALUE + "-file"
    backend = harness.backend(
        host_env={"PATH": os.environ["PATH"], "PAIRLAB_TEST_SECRET": SECRET_VALUE},
        secret_files={".codex/auth.json": file_value},
    )
    profile = harness.profile(env_allowlist=["PATH"], secrets=["PAIRLAB_TEST_SECRET"])
    auth = '"$HOME/.codex/auth.json"'
    script = (
        f'wc -c < {auth} > "$PAIRLAB_STATE_DIR/file-size"; '
        f'stat -c %a {auth} > "$PAIRLAB_STATE_DIR/file-mode"; '
        'printf %s "$PAIRLAB_TEST_SECRET" | wc -c > "$PAIRLAB_STATE_DIR/env-size"; exit 3'
    )
    prepared = backend.prepare(harness.spec(script, profile=profile, keep=True))
    try:
        inspected = ""
        if harness.docker is not None:
            container = harness.docker.containers.get(prepared.container_id)
            inspected = json.dumps(container.attrs)
            secret_dir = container.labels["pairlab.secrets_dir"]
            assert Path(secret_dir).is_dir()
        outcome = backend.run(prepared)
        # the agent's own exit code comes through the wrapper
        assert outcome.exit_code == 3, outcome.stderr
        if harness.docker is not None:
            assert not Path(secret_dir).exists()
            chunks, _ = container.get_archive("/pairlab/agent/home/.codex")
            names = subprocess.run(
                ["tar", "-t"], input=b"".join(chunks), capture_output=True, check=True
            ).stdout.decode()
            assert "auth.json" not in names  # removed by the wrapper, not by collection
        else:
            assert prepared.root is not None
            assert not (prepared.root / "home" / ".codex" / "auth.json").exists()
        collected = backend.collect(prepared, tmp_path / "out")
    finally:
        backend.cleanup(prepared.model_copy(update={"spec": prepared.spec.model_copy(
            update={"keep_workspace": False})}))  # fmt: skip
    state = collected.dest / "state"
    assert int((state / "file-size").read_text()) == len(file_value)
    assert (state / "file-mode").read_text().strip() == "600"
    assert int((state / "env-size").read_text()) == len(SECRET_VALUE)
    assert not (collected.dest / "home" / ".codex" / "auth.json").exists()
    assert prepared.secret_names == ["PAIRLAB_TEST_SECRET", "$HOME/.codex/auth.json"]
    everything = [p.read_bytes() for p in collected.dest.rglob("*") if p.is_file()]
    for blob in [*everything, inspected.encode(), prepared.model_dump_json().encode()]:
        assert SECRET_VALUE.encode() not in blob
    assert harness.leftovers(prepared) == []


def test_an_agent_killed_at_its_timeout_leaves_no_secret_file(harness: Harness) -> None:
    """The wrapper cannot remove a secret file when the agent ignores SIGTERM and is
    killed: the backend scrubs it, so a kept HOME (volume) does not hold it either."""
    backend = harness.backend(
        host_env={"PATH": os.environ["PATH"]}, secret_files={".codex/auth.json": SECRET_VALUE}
    )
    spec = harness.spec('trap "" TERM; sleep 60', timeout_s=2, keep=True)
    prepared = backend.prepare(spec)
    try:
        outcome = backend.run(prepared)
        assert outcome.timed_out
        if harness.docker is not None:
            container = harness.docker.containers.get(prepared.container_id)
            chunks, _ = container.get_archive("/pairlab/agent/home/.codex")
            names = subprocess.run(
                ["tar", "-t"], input=b"".join(chunks), capture_output=True, check=True
            ).stdout.decode()
            assert "auth.json" not in names
        else:
            assert prepared.root is not None
            assert not (prepared.root / "home" / ".codex" / "auth.json").exists()
    finally:
        backend.cleanup(prepared.model_copy(update={"spec": spec.model_copy(
            update={"keep_workspace": False})}))  # fmt: skip
    assert harness.leftovers(prepared) == []


def test_collect_hashes_and_grader_exec_in_workspace(harness: Harness, tmp_path: Path) -> None:
    backend = harness.backend()
    script = (
        'printf answer > "$PAIRLAB_STATE_DIR/out.txt"; printf fixed > code.py; '
        'printf h > "$HOME/h.txt"; printf g > "$PAIRLAB_GRAPH_DIR/g.txt"; '
        # next to the role directories, outside every role: never collected
        'printf stray > "$HOME/../stray.txt" 2>/dev/null || true'
    )
    spec = harness.spec(script)
    prepared = backend.prepare(spec)
    try:
        outcome = backend.run(prepared)
        assert outcome.exit_code == 0, outcome.stderr
        collected = backend.collect(prepared, tmp_path / "dest")
        grader = backend.exec_in_workspace(
            prepared,
            [
                "python3",
                "-c",
                "import sys; sys.exit(0 if open('code.py').read() == 'fixed' else 1)",
            ],
            30,
        )
        failing = backend.exec_in_workspace(prepared, ["python3", "-c", "raise SystemExit(4)"], 30)
    finally:
        backend.cleanup(prepared)
    by_path = {f.path: f for f in collected.files}
    assert by_path["state/out.txt"].sha256 == hashlib.sha256(b"answer").hexdigest()
    assert (tmp_path / "dest" / "state" / "out.txt").read_text() == "answer"
    # every collected role comes back (Docker: one archive of all three), nothing else
    assert by_path["home/h.txt"].sha256 == hashlib.sha256(b"h").hexdigest()
    assert by_path["graph/g.txt"].sha256 == hashlib.sha256(b"g").hexdigest()
    assert all(p.split("/", 1)[0] in ("home", "state", "graph") for p in by_path), by_path
    assert not (tmp_path / "dest" / "stray.txt").exists()
    assert grader.exit_code == 0
    assert failing.exit_code == 4 and failing.crashed
    assert harness.leftovers(prepared) == []


@DOCKER_ONLY  # volumes, labels and limits exist only on Docker
def test_labels_and_limits_on_docker(harness: Harness) -> None:
    assert harness.docker is not None
    backend = harness.backend()
    spec = harness.spec("true", run_id="labelled-run")
    prepared = backend.prepare(spec)
    try:
        volumes = harness.docker.volumes.list(
            filters={"label": f"pairlab.episode_id={spec.episode_id}"}
        )
        assert sorted(v.attrs["Labels"]["pairlab.role"] for v in volumes) == [
            "graph",
            "home",
            "state",
            "workspace",
        ]
        for volume in volumes:
            labels = volume.attrs["Labels"]
            assert labels["pairlab.managed"] == "true"
            assert labels["pairlab.run_id"] == "labelled-run"
        container = harness.docker.containers.get(prepared.container_id)
        assert container.attrs["Config"]["User"] == "1000:1000"
        assert container.attrs["HostConfig"]["NetworkMode"] == "none"
        assert container.attrs["HostConfig"]["Memory"] == 256 * 1024 * 1024
        assert container.attrs["HostConfig"]["PidsLimit"] == 64
    finally:
        backend.cleanup(prepared)
    assert harness.leftovers(prepared) == []


ORPHAN_MAKER = textwrap.dedent(
    """
    import json, os, sys
    from pathlib import Path
    from pairlab.adapters.backends import EpisodeSpec, make_backend
    from tests.integration.backend_fixtures import shell_profile
    name, base, fixture, image = sys.argv[1:5]
    opts = {"base_dir": Path(base)} if name == "local" else {}
    backend = make_backend(name, **opts)
    spec = EpisodeSpec(run_id="orphaned-run", episode_id="orphaned-run:t:0:baseline", pair_id="orphaned-run:t:0",
                       task_id="t", arm="baseline", prompt="true", profile=shell_profile(image=image),
                       fixture_dir=Path(fixture), timeout_s=10)
    prepared = backend.prepare(spec)
    print(json.dumps({"root": str(prepared.root), "volumes": prepared.volumes}), flush=True)
    os._exit(0)  # the owning process dies without cleaning up
    """
)


def test_orphans_of_dead_processes_are_removed_at_backend_start(harness: Harness) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            ORPHAN_MAKER,
            harness.name,
            str(harness.tmp / "episodes"),
            str(harness.fixture),
            harness.image or "unused",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert result.returncode == 0, result.stderr
    left = json.loads(result.stdout.strip().splitlines()[-1])
    if harness.name == "local":
        assert Path(left["root"]).is_dir()
    else:
        assert harness.docker is not None
        assert (
            len(harness.docker.volumes.list(filters={"label": "pairlab.run_id=orphaned-run"})) == 4
        )

    # an active run's resources survive; a new backend removes the dead process's orphans
    harness.backend()
    if harness.name == "local":
        assert not Path(left["root"]).exists()
    else:
        assert harness.docker is not None
        assert harness.docker.volumes.list(filters={"label": "pairlab.run_id=orphaned-run"}) == []
        assert (
            harness.docker.containers.list(
                all=True, filters={"label": "pairlab.run_id=orphaned-run"}
            )
            == []
        )


def test_live_episodes_of_this_process_are_not_orphans(harness: Harness) -> None:
    backend = harness.backend()
    prepared = backend.prepare(harness.spec("true", run_id="still-running"))
    try:
        harness.backend()  # a second backend in the same (alive) process cleans nothing of ours
        outcome = backend.run(prepared)
        assert outcome.exit_code == 0
    finally:
        backend.cleanup(prepared)
    assert harness.leftovers(prepared) == []


def test_captured_streams_are_bounded(harness: Harness) -> None:
    from pairlab.adapters.backends.base import STREAM_CAP_BYTES

    backend = harness.backend()
    script = "head -c 9437184 /dev/zero | tr '\\000' a; echo small >&2"
    outcome, _, prepared = run_episode(backend, harness.spec(script))
    assert outcome.exit_code == 0
    assert outcome.stdout_truncated is True and len(outcome.stdout) == STREAM_CAP_BYTES
    assert set(outcome.stdout) == {"a"}
    assert outcome.stderr_truncated is False and outcome.stderr.strip() == "small"
    assert harness.leftovers(prepared) == []
