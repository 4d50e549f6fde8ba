"""Claude Code transcripts: ``$CLAUDE_CONFIG_DIR/projects/<slug>/<session>.jsonl``.

Reproduces the quirks usage readers must handle (CLIENTS.md): each API response
is streamed as several lines (one per content block) sharing ``message.id`` and
``requestId``, early lines carry a placeholder ``output_tokens`` and the last the
real one; a Task tool result's ``toolUseResult.usage`` copies subagent usage (not
new usage); for arm ``full`` a subagent file
``<slug>/<session>/subagents/agent-<id>.jsonl`` (``isSidechain: true``) replays
one parent message with the same ``message.id`` under a new ``requestId``.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

from pairlab_simclient.episode_env import EpisodeEnv, format_ts, random_token, random_uuid
from pairlab_simclient.format_result import FILLER, Clock, FormatResult, total_vector, write_jsonl
from pairlab_simclient.usage_draw import CallUsage, EpisodeDraw

CLAUDE_VERSION = "2.1.3"
DEFAULT_MODEL = "claude-sonnet-5"
PRESENT = ("uncached_input", "cache_read", "cache_write_5m", "cache_write_1h", "output")


def project_slug(cwd: Path) -> str:
    """Claude Code's project directory name: every non-alphanumeric character becomes '-'."""
    return re.sub(r"[^a-zA-Z0-9]", "-", str(cwd))


def claude_usage(call: CallUsage, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": call.uncached_input,
        "cache_creation_input_tokens": call.cache_write_5m + call.cache_write_1h,
        "cache_read_input_tokens": call.cache_read,
        "cache_creation": {
            "ephemeral_5m_input_tokens": call.cache_write_5m,
            "ephemeral_1h_input_tokens": call.cache_write_1h,
        },
        "output_tokens": output_tokens,
        "service_tier": "standard",
    }


class _Writer:
    def __init__(
        self, env: EpisodeEnv, rng: random.Random, model: str, session_id: str, clock: Clock
    ) -> None:
        self.env = env
        self.rng = rng
        self.model = model
        self.session_id = session_id
        self.clock = clock

    def base(
        self, kind: str, parent: str | None, sidechain: bool, agent_id: str | None
    ) -> dict[str, Any]:
        line: dict[str, Any] = {
            "parentUuid": parent,
            "isSidechain": sidechain,
            "userType": "external",
            "cwd": str(self.env.workspace),
            "sessionId": self.session_id,
            "version": CLAUDE_VERSION,
            "gitBranch": "",
        }
        if agent_id is not None:
            line["agentId"] = agent_id
        line["type"] = kind
        return line

    def user(
        self,
        content: Any,
        parent: str | None,
        sidechain: bool = False,
        agent_id: str | None = None,
        tool_result: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        line = self.base("user", parent, sidechain, agent_id)
        line["message"] = {"role": "user", "content": content}
        if tool_result is not None:
            line["toolUseResult"] = tool_result
        line["uuid"] = random_uuid(self.rng)
        line["timestamp"] = format_ts(self.clock.tick())
        return line

    def response(
        self,
        call: CallUsage,
        blocks: list[dict[str, Any]],
        parent: str | None,
        sidechain: bool = False,
        agent_id: str | None = None,
    ) -> list[dict[str, Any]]:
        """One API response streamed as one line per content block."""
        msg_id = "msg_01" + random_token(self.rng, 22)
        request_id = "req_011C" + random_token(self.rng, 20)
        lines = []
        for i, block in enumerate(blocks):
            is_last = i == len(blocks) - 1
            output = call.output if is_last else self.rng.randint(1, min(7, call.output - 1))
            line = self.base("assistant", parent, sidechain, agent_id)
            line["message"] = {
                "model": self.model,
                "id": msg_id,
                "type": "message",
                "role": "assistant",
                "content": [block],
                "stop_reason": ("tool_use" if block["type"] == "tool_use" else "end_turn")
                if is_last
                else None,
                "stop_sequence": None,
                "usage": claude_usage(call, output),
            }
            line["requestId"] = request_id
            line["uuid"] = random_uuid(self.rng)
            line["timestamp"] = format_ts(self.clock.tick())
            parent = line["uuid"]
            lines.append(line)
        return lines

    def blocks(
        self, call: CallUsage, final_text: str | None, tool: tuple[str, dict[str, Any]] | None
    ) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if call.reasoning > 0:
            out.append(
                {
                    "type": "thinking",
                    "thinking": self.rng.choice(FILLER),
                    "signature": random_token(self.rng, 48),
                }
            )
        if final_text is not None:
            out.append({"type": "text", "text": final_text})
        else:
            if self.rng.random() < 0.6:
                out.append({"type": "text", "text": self.rng.choice(FILLER)})
            assert tool is not None
            out.append(
                {
                    "type": "tool_use",
                    "id": "toolu_01" + random_token(self.rng, 22),
                    "name": tool[0],
                    "input": tool[1],
                }
            )
        return out


def _tool(rng: random.Random) -> tuple[str, dict[str, Any]]:
    return rng.choice(
        [
            ("Bash", {"command": "python3 -m unittest -q", "description": "Run the tests"}),
            ("Read", {"file_path": "README.md"}),
            ("Grep", {"pattern": "def ", "path": "."}),
            ("Edit", {"file_path": "main.py", "old_string": "a", "new_string": "b"}),
        ]
    )


def _task_tool() -> tuple[str, dict[str, Any]]:
    """The parent's call handing work to a subagent (the ``full`` arm)."""
    task = {"description": "Investigate", "prompt": "Find the defect"}
    return "Task", {**task, "subagent_type": "general-purpose"}


def _task_result(
    rng: random.Random, tool_use_id: str, sub_calls: list[CallUsage], agent_id: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The ``toolUseResult`` of a subagent's Task and the tool_result content."""
    result: dict[str, Any] = {
        "status": "completed",
        "prompt": "Find the defect",
        "agentId": agent_id,
        "content": [{"type": "text", "text": "The defect is in the edge-case handling."}],
        "totalDurationMs": rng.randint(2000, 30000),
        "totalTokens": sum(c.uncached_input + c.cache_read + c.output for c in sub_calls),
        "totalToolUseCount": len(sub_calls) - 1,
        # a copy of the subagent's usage: readers must not count it again
        "usage": claude_usage(sub_calls[-1], sub_calls[-1].output),
    }
    content = [{"tool_use_id": tool_use_id, "type": "tool_result", "content": result["content"]}]
    return result, content


def _shell_result(tool_use_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    result = {"stdout": "ok", "stderr": "", "interrupted": False, "isImage": False}
    content = [
        {"tool_use_id": tool_use_id, "type": "tool_result", "content": "ok", "is_error": False}
    ]
    return result, content


def write_claude(
    env: EpisodeEnv, draw: EpisodeDraw, prompt: str, model: str | None, final_text: str
) -> FormatResult:
    rng = env.rng("claude-records")
    model = model or DEFAULT_MODEL
    session_id = random_uuid(rng)
    clock = Clock(env.started_at, rng)
    w = _Writer(env, rng, model, session_id, clock)
    n_sub = min(2, len(draw.calls) - 2) if env.arm == "full" else 0
    parent_calls = draw.calls[: len(draw.calls) - n_sub] if n_sub > 0 else list(draw.calls)
    sub_calls = draw.calls[len(parent_calls) :]

    project_dir = env.claude_config_dir / "projects" / project_slug(env.workspace)
    lines: list[dict[str, Any]] = [
        {
            "type": "file-history-snapshot",
            "messageId": random_uuid(rng),
            "snapshot": {"trackedFileBackups": {}},
            "isSnapshotUpdate": False,
        }
    ]
    prompt_line = w.user(prompt, None)
    lines.append(prompt_line)
    parent = prompt_line["uuid"]
    sub_lines: list[dict[str, Any]] = []
    agent_id = random_token(rng, 8).lower()
    first_response_last_line: dict[str, Any] | None = None
    for i, call in enumerate(parent_calls):
        is_last = i == len(parent_calls) - 1
        use_task = n_sub > 0 and i == 0 and not is_last
        tool = _task_tool() if use_task else _tool(rng)
        blocks = w.blocks(call, final_text if is_last else None, None if is_last else tool)
        response = w.response(call, blocks, parent)
        lines.extend(response)
        parent = response[-1]["uuid"]
        if first_response_last_line is None:
            first_response_last_line = response[-1]
        if is_last:
            break
        tool_use_id = blocks[-1]["id"]
        if use_task:
            sub_lines = _subagent_lines(w, sub_calls, agent_id, first_response_last_line)
            result, content = _task_result(rng, tool_use_id, sub_calls, agent_id)
        else:
            result, content = _shell_result(tool_use_id)
        user_line = w.user(content, parent, tool_result=result)
        lines.append(user_line)
        parent = user_line["uuid"]

    paths = [project_dir / f"{session_id}.jsonl"]
    write_jsonl(paths[0], lines)
    if sub_lines:
        sub_path = project_dir / session_id / "subagents" / f"agent-{agent_id}.jsonl"
        write_jsonl(sub_path, sub_lines)
        paths.append(sub_path)
    return FormatResult(
        session_id=session_id,
        model=model,
        vector=total_vector(draw.calls, PRESENT),
        api_calls=len(draw.calls),
        record_paths=paths,
        stdout=final_text + "\n",
        extra={"subagent_calls": len(sub_calls)},
    )


def _subagent_lines(
    w: _Writer, calls: list[CallUsage], agent_id: str, replay: dict[str, Any] | None
) -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    first = w.user("Find the defect", None, sidechain=True, agent_id=agent_id)
    lines.append(first)
    parent = first["uuid"]
    if replay is not None:
        # the parent's message replayed: same message.id, new requestId (not new usage)
        copy = json.loads(json.dumps(replay))
        copy.update(isSidechain=True, agentId=agent_id, parentUuid=parent, uuid=random_uuid(w.rng))
        copy["requestId"] = "req_011C" + random_token(w.rng, 20)
        copy["timestamp"] = format_ts(w.clock.tick())
        lines.append(copy)
        parent = copy["uuid"]
    for i, call in enumerate(calls):
        is_last = i == len(calls) - 1
        blocks = w.blocks(
            call,
            "The defect is in the edge-case handling." if is_last else None,
            None if is_last else _tool(w.rng),
        )
        response = w.response(call, blocks, parent, sidechain=True, agent_id=agent_id)
        lines.extend(response)
        parent = response[-1]["uuid"]
        if not is_last:
            result_line = w.user(
                [{"tool_use_id": blocks[-1]["id"], "type": "tool_result", "content": "ok"}],
                parent,
                sidechain=True,
                agent_id=agent_id,
                tool_result={"stdout": "ok", "stderr": "", "interrupted": False, "isImage": False},
            )
            lines.append(result_line)
            parent = result_line["uuid"]
    return lines
