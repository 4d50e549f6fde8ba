"""Faults against a real S3 server process: stopped mid-publish, unreachable endpoint.

The server here is a ``moto_server`` subprocess (stoppable, unlike the shared
in-process one). moto keeps its state in memory, so to bring the server *back*
with what it held, it runs with moto's request recorder on and the restarted
process replays the recording: the objects uploaded before the stop are there
again, exactly as a durable server would keep them.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from pairlab.adapters.store import open_store
from pairlab.adapters.store.publish import publish_run_detailed
from pairlab.adapters.store.runs import list_runs, pull_run
from pairlab.cli import main
from pairlab.core.errors import EnvironmentUnavailable, PublishError, ReasonCode
from tests.integration.store.conftest import FAST_S3_OPTIONS, free_port, s3_client
from tests.integration.store.run_dirs import snapshot, write_eval_run
from tests.support import require

pytestmark = pytest.mark.s3

MOTO_SERVER = Path(sys.executable).parent / "moto_server"


class MotoProcess:
    """``moto_server -H 127.0.0.1 -p PORT`` with its requests recorded to a file."""

    def __init__(self, port: int, recording: Path) -> None:
        self.port = port
        self.recording = recording
        self.endpoint = f"http://127.0.0.1:{port}"
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {
            **os.environ,
            "MOTO_ENABLE_RECORDING": "1",
            "MOTO_RECORDER_FILEPATH": str(self.recording),
        }
        self._process = subprocess.Popen(
            [str(MOTO_SERVER), "-H", "127.0.0.1", "-p", str(self.port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"moto_server exited with {self._process.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("moto_server did not start listening within 30 s")

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            self._process.wait(timeout=15)
        self._process = None

    def replay(self) -> None:
        """Restore the state recorded before the stop (moto's recorder API)."""
        request = urllib.request.Request(
            f"{self.endpoint}/moto-api/recorder/replay-recording", method="POST", data=b""
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            assert response.status == 200


@pytest.fixture
def moto_process(aws_env: None, tmp_path: Path) -> Iterator[MotoProcess]:
    require(MOTO_SERVER.is_file(), f"moto_server executable ({MOTO_SERVER})")
    server = MotoProcess(free_port(), tmp_path / "moto-recording.jsonl")
    server.start()
    yield server
    server.stop()


def test_server_stopped_mid_publish_then_retry_completes(
    moto_process: MotoProcess, tmp_path: Path
) -> None:
    s3_client(moto_process.endpoint).create_bucket(Bucket="faults")
    url = "s3://faults/evals"
    run_dir = write_eval_run(tmp_path / "local", "eval-fault")
    store = open_store(url, endpoint_url=moto_process.endpoint, **FAST_S3_OPTIONS)
    uploaded_before_stop: list[str] = []

    def stop_after_three(key: str) -> None:
        uploaded_before_stop.append(key)
        if len(uploaded_before_stop) == 3:
            moto_process.stop()

    with pytest.raises(EnvironmentUnavailable) as caught:
        publish_run_detailed(run_dir, store, on_upload=stop_after_three)
    assert caught.value.reason == ReasonCode.S3_UNAVAILABLE
    assert caught.value.exit_code == 3
    assert len(uploaded_before_stop) == 3 and "manifest.json" not in uploaded_before_stop

    moto_process.start()
    moto_process.replay()
    store = open_store(url, endpoint_url=moto_process.endpoint, **FAST_S3_OPTIONS)
    [row] = list_runs(store)
    assert (row.run_id, row.status, row.objects) == ("eval-fault", "incomplete", 3)
    assert store.head("runs/eval-fault/manifest.json") is None
    with pytest.raises(PublishError) as refused:
        pull_run(store, "eval-fault", tmp_path / "early-pull")
    assert refused.value.reason == ReasonCode.RUN_INCOMPLETE

    retry = publish_run_detailed(run_dir, store)
    assert sorted(retry.skipped) == sorted(uploaded_before_stop)
    assert len(retry.uploaded) == len(retry.manifest.objects) - 3
    [row] = list_runs(store)
    assert row.status == "complete"
    pull_run(store, "eval-fault", tmp_path / "pulled")
    pulled = snapshot(tmp_path / "pulled")
    assert {k: v for k, v in pulled.items() if k != "manifest.json"} == snapshot(run_dir)


def test_unreachable_endpoint_is_environment_unavailable(
    aws_env: None,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    port = free_port()  # nothing listens here: connection refused
    store = open_store("s3://nowhere/x", endpoint_url=f"http://127.0.0.1:{port}", **FAST_S3_OPTIONS)
    with pytest.raises(EnvironmentUnavailable) as caught:
        list_runs(store)
    assert caught.value.reason == ReasonCode.S3_UNAVAILABLE

    # The CLI, configured the standard way: endpoint and attempts from the environment.
    run_dir = write_eval_run(tmp_path / "local", "eval-unreachable")
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "2")
    monkeypatch.setenv("PAIRLAB_S3_RETRIES", "2")
    monkeypatch.setenv("PAIRLAB_S3_BACKOFF_S", "0.05")
    for args in (
        ["runs", "list", "s3://nowhere/x", "--json"],
        ["publish", str(run_dir), "--to", "s3://nowhere/x", "--json"],
        ["pull", "s3://nowhere/x/runs/eval-unreachable", "--to", str(tmp_path / "p"), "--json"],
    ):
        with pytest.raises(SystemExit) as exited:
            main(args)
        assert exited.value.code == 3, args
        assert json.loads(capsys.readouterr().out)["reason_code"] == "s3-unavailable"
