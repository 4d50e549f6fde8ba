"""A real ``token-optimizer mcp`` process driven over its stdio, as an MCP client does.

Requests are JSON lines written to the server's stdin; each reply is the next
line of its stdout (the server answers requests in order and never notifications).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

INITIALIZE_CLAUDE = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"roots": {"listChanged": True}, "elicitation": {"form": {}, "url": {}}},
    "clientInfo": {"name": "claude-code", "title": "Claude Code", "version": "2.1.332"},
}


@dataclass
class EpisodeDirs:
    """A workspace and a state dir laid out as a backend lays them out."""

    root: Path
    workspace: Path = field(init=False)
    state: Path = field(init=False)

    def __post_init__(self) -> None:
        self.workspace = self.root / "workspace"
        self.state = self.root / "state"
        self.workspace.mkdir(parents=True, exist_ok=True)
        self.state.mkdir(parents=True, exist_ok=True)

    @property
    def ledger(self) -> Path:
        return self.state / "mcp-ledger.jsonl"

    def rows(self) -> list[dict[str, Any]]:
        if not self.ledger.exists():
            return []
        return [json.loads(line) for line in self.ledger.read_text().splitlines()]

    def env(self, arm: str | None, **extra: str) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", os.defpath),
            "HOME": str(self.root),
            "PAIRLAB_STATE_DIR": str(self.state),
            "PAIRLAB_WORKSPACE_ROOT": str(self.workspace),
            "PAIRLAB_WORKSPACE": str(self.workspace),
            "PAIRLAB_EPISODE_ID": "run-t:task:0:" + (arm or "baseline"),
        }
        if arm is not None:
            env["TOKEN_OPTIMIZER_EXPERIMENT_ARM"] = arm
        env.update(extra)
        return env


class ServerProcess:
    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pairlab.intervention", "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
        )
        self._next_id = 100

    def send_line(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode("utf-8") + b"\n")
        self.proc.stdin.flush()

    def read_reply(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, "the server closed its stdout"
        reply: dict[str, Any] = json.loads(line)
        return reply

    def request(
        self, method: str, params: dict[str, Any] | None = None, **kw: Any
    ) -> dict[str, Any]:
        request_id = kw.pop("id", None)
        if request_id is None:
            self._next_id += 1
            request_id = self._next_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send_line(json.dumps(message))
        reply = self.read_reply()
        assert reply["id"] == request_id, reply
        return reply

    def notify(self, method: str) -> None:
        self.send_line(json.dumps({"jsonrpc": "2.0", "method": method}))

    def handshake(self, params: dict[str, Any] = INITIALIZE_CLAUDE) -> dict[str, Any]:
        reply = self.request("initialize", params, id=0)
        self.notify("notifications/initialized")
        return reply

    def call(self, name: str, arguments: dict[str, Any], **meta: Any) -> dict[str, Any]:
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        if meta:
            params["_meta"] = meta
        return self.request("tools/call", params)

    def close(self) -> tuple[int, str]:
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        code = self.proc.wait(timeout=30)
        err = self.proc.stderr.read().decode("utf-8", "replace")
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        self.proc.stderr.close()
        return code, err


def text_of(reply: dict[str, Any]) -> str:
    content = reply["result"]["content"]
    assert [c["type"] for c in content] == ["text"], content
    text: str = content[0]["text"]
    return text
