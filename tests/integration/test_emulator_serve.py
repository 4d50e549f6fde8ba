"""``pairlab emulator serve`` as a process: it prints where it listens, takes registrations
over its admin API (``pairlab emulator register``) and answers a provider SDK."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anthropic
import httpx

from tests.emulator_support import claude_request
from tests.support import CATALOG_DIR, REPO_ROOT, cli_exit


def test_serve_register_and_answer(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    ledgers = tmp_path / "ledgers"
    server = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from pairlab.cli import main; main()",
            "emulator",
            "serve",
            "--port",
            "0",
            "--ledger-dir",
            str(ledgers),
            "--catalog-dir",
            str(CATALOG_DIR),
            "--keep-requests",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert server.stdout is not None
        first = server.stdout.readline()
        assert first.startswith("pairlab emulator listening on http://127.0.0.1:"), first
        url = first.split()[4]
        assert httpx.get(url + "/healthz").json()["ok"] is True
        code = cli_exit(
            [
                "emulator",
                "register",
                "--url",
                url,
                "--task",
                "fix-median",
                "--seed",
                "2",
                "--fault",
                "overloaded-529@0",
                "--json",
            ]
        )
        assert code == 0
        registered = json.loads(capsys.readouterr().out)
        with anthropic.Anthropic(
            base_url=registered["anthropic_base_url"], api_key="k", max_retries=2
        ) as client:
            message = client.messages.create(**claude_request("go"))
        assert message.content[-1].type == "tool_use"
        base = registered["anthropic_base_url"]
        unserved = httpx.get(base + "/v1/models", headers={"authorization": "Bearer k"})
        assert unserved.status_code == 404 and unserved.headers["x-request-id"]
        answered = httpx.get(f"{url}/admin/episodes/{registered['token']}")
        assert answered.status_code == 200  # an unserved path leaves the ledger readable
        summary = answered.json()
        assert summary["faults"] == ["overloaded-529"] and summary["delivered"] == 1
        # every request is kept, the unserved one too (what the client sent)
        kept = sorted((ledgers / f"{registered['token']}.requests").glob("*.json"))
        assert len(kept) == 3 and json.loads(kept[0].read_bytes())["model"] == "claude-emulated-1"
        assert (
            cli_exit(
                ["emulator", "register", "--url", url, "--task", "fix-median", "--fault", "oops"]
            )
            == 2
        )
        capsys.readouterr()
        unknown = ["emulator", "register", "--url", url, "--task", "no-such-task"]
        assert cli_exit([*unknown, "--json"]) == 2
        refused = json.loads(capsys.readouterr().out)
        assert refused["reason_code"] == "unknown-task"
        assert refused["error"].startswith(  # the emulator's text, not its JSON answer
            "the emulator refused the registration: unknown task 'no-such-task'"
        )
        assert cli_exit(unknown) == 2
        shown = capsys.readouterr()
        assert "unknown task 'no-such-task'" in shown.err and '\\"' not in shown.err + shown.out
    finally:
        server.send_signal(signal.SIGINT)
        try:
            _, errors = server.communicate(timeout=20)  # also closes the pipes
        except subprocess.TimeoutExpired:
            server.kill()
            _, errors = server.communicate()
    assert server.returncode in (0, -signal.SIGINT, 130), errors


def test_register_against_no_emulator_is_an_environment_error(capsys) -> None:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    code = cli_exit(
        ["emulator", "register", "--url", "http://127.0.0.1:9", "--task", "fix-median", "--json"]
    )
    assert code == 3 and time.perf_counter() - started < 15
    assert json.loads(capsys.readouterr().out)["reason_code"] == "environment-unavailable"
