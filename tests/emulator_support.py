"""Shared by the emulator tests: requests shaped like the real CLIs' and SSE helpers.

The request builders produce the fields the scripted model reads (tools, the
working directory line, the history of calls and results), in each CLI's own shape,
so the official SDKs can drive whole scripted episodes against the emulator.
"""

from __future__ import annotations

import copy
import json
from typing import Any

CWD = "/work/space"

CLAUDE_TOOLS: list[dict[str, Any]] = [
    {
        "name": name,
        "description": f"the {name} tool",
        "input_schema": {"type": "object", "properties": props, "required": sorted(props)},
    }
    for name, props in {
        "Bash": {"command": {"type": "string"}, "description": {"type": "string"}},
        "Read": {"file_path": {"type": "string"}},
        "Edit": {
            "file_path": {"type": "string"},
            "old_string": {"type": "string"},
            "new_string": {"type": "string"},
        },
        "Write": {"file_path": {"type": "string"}, "content": {"type": "string"}},
    }.items()
]
CLAUDE_SYSTEM = [
    {
        "type": "text",
        "text": "You are a coding agent. " * 400,
        "cache_control": {"type": "ephemeral"},
    }
]

CODEX_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "name": "exec_command",
        "description": "Runs a command.",
        "strict": False,
        "parameters": {
            "type": "object",
            "properties": {"cmd": {"type": "string"}},
            "required": ["cmd"],
        },
    },
    {
        "type": "custom",
        "name": "apply_patch",
        "description": "Edit files with a patch. " * 50,
        "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/"},
    },
]
CODEX_SEARCH_TOOL: dict[str, Any] = {
    "type": "tool_search",
    "execution": "client",
    "description": "Tool discovery. Sources:\n- token-optimizer\n",
    "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
}


def claude_request(
    prompt: str, history: list[dict[str, Any]] | None = None, **extra: Any
) -> dict[str, Any]:
    messages = [
        {"role": "user", "content": [{"type": "text", "text": prompt}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": f"# Environment\n - Primary working directory: {CWD}\n"}
            ],
        },
        *copy.deepcopy(history or []),
    ]
    last = messages[-1]["content"][-1]  # the moving breakpoint, as Claude Code places it
    last["cache_control"] = {"type": "ephemeral"}
    body: dict[str, Any] = {
        "model": "claude-emulated-1",
        "max_tokens": 4096,
        "system": CLAUDE_SYSTEM,
        "tools": copy.deepcopy(CLAUDE_TOOLS),
        "messages": messages,
    }
    body.update(extra)
    return body


def claude_tool_result(tool_use: dict[str, Any], output: str) -> list[dict[str, Any]]:
    """The assistant turn with ``tool_use`` and the user turn with its result."""
    return [
        {"role": "assistant", "content": [tool_use]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": tool_use["id"], "content": output}],
        },
    ]


def codex_request(
    prompt: str, history: list[dict[str, Any]] | None = None, *, search: bool = False
) -> dict[str, Any]:
    return {
        "model": "gpt-emulated-1",
        "stream": True,
        "instructions": "",
        "tools": copy.deepcopy([*CODEX_TOOLS, *([CODEX_SEARCH_TOOL] if search else [])]),
        "input": [
            {
                "type": "message",
                "role": "developer",
                "content": [{"type": "input_text", "text": "You are Codex. " * 300}],
            },
            {
                "type": "message",
                "role": "user",
                "content": [
                    {
                        "type": "input_text",
                        "text": f"<environment_context><cwd>{CWD}</cwd></environment_context>",
                    }
                ],
            },
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": prompt}],
            },
            *(history or []),
        ],
        "prompt_cache_key": "thread-1",
    }


def codex_output_for(item: dict[str, Any]) -> dict[str, Any]:
    """What Codex would append after executing a call item (its result)."""
    kind = item["type"]
    if kind == "custom_tool_call":
        return {"type": "custom_tool_call_output", "call_id": item["call_id"], "output": "Success."}
    if kind == "tool_search_call":
        return {
            "type": "tool_search_output",
            "call_id": item["call_id"],
            "status": "completed",
            "execution": "client",
            "tools": [
                {
                    "type": "namespace",
                    "name": "mcp__token_optimizer",
                    "description": "Tools in the namespace.",
                    "tools": [
                        {"type": "function", "name": n, "parameters": {"type": "object"}}
                        for n in ("read_file", "expand")
                    ],
                }
            ],
        }
    return {"type": "function_call_output", "call_id": item["call_id"], "output": "ok"}


def sse_events(text: str) -> list[tuple[str, dict[str, Any]]]:
    """(event name, data) of every frame of an SSE body."""
    out = []
    for frame in text.split("\n\n"):
        name, data = None, None
        for line in frame.splitlines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data = json.loads(line[6:])
        if name is not None and data is not None:
            out.append((name, data))
    return out
