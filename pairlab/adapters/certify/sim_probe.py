"""The isolation probe's material: a planted host config, the config a HOME holds, what a client saw.

``plant_host_config`` fills a stand-in for the host user's HOME with a hook, MCP
servers and rule files for every client, all carrying the ``PLANTED`` marker in
their names. A baseline episode must see none of it (nor anything else); a
treated episode must see exactly what the profile's home seed holds.

``config_in_home`` derives that expectation independently of the simulator,
with the rules the simulator documents (hooks by event name from the Claude and
Gemini settings, MCP servers by name from every client's config, rule files
``CLAUDE.md``/``AGENTS.md``/``GEMINI.md`` by path relative to HOME). Two
implementations that must agree are a stronger check than one reused.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

PLANTED = "pairlab-planted"
RULE_FILE_NAMES = ("CLAUDE.md", "AGENTS.md", "GEMINI.md")
_SKIPPED_DIRS = {"projects", "sessions", "archived_sessions", "tmp", "node_modules", ".git"}
_MAX_DEPTH = 4
FOUND_LINE = re.compile(
    r"^simclient: found hooks=(\[.*?\]) mcp_servers=(\[.*?\]) rules=(\[.*?\])\s*$", re.M
)


@dataclass(frozen=True)
class SeenConfig:
    hooks: tuple[str, ...] = ()
    mcp_servers: tuple[str, ...] = ()
    rules: tuple[str, ...] = ()

    @classmethod
    def of(cls, hooks: object, mcp_servers: object, rules: object) -> SeenConfig:
        def norm(value: object) -> tuple[str, ...]:
            return tuple(sorted(str(v) for v in value)) if isinstance(value, list) else ()

        return cls(norm(hooks), norm(mcp_servers), norm(rules))

    def is_empty(self) -> bool:
        return not (self.hooks or self.mcp_servers or self.rules)

    def items(self) -> list[str]:
        return [
            *(f"hook:{h}" for h in self.hooks),
            *(f"mcp:{m}" for m in self.mcp_servers),
            *(f"rule:{r}" for r in self.rules),
        ]

    def difference(self, expected: SeenConfig) -> tuple[list[str], list[str]]:
        """(seen but not expected, expected but not seen)."""
        have, want = set(self.items()), set(expected.items())
        return sorted(have - want), sorted(want - have)

    def describe(self) -> str:
        return ", ".join(self.items()) or "nothing"


def plant_host_config(home: Path) -> None:
    """Write a hook, MCP servers and rule files for every client into ``home`` (a fake host HOME)."""
    claude = home / ".claude"
    codex = home / ".codex"
    gemini = home / ".gemini"
    for directory in (claude, codex, gemini):
        directory.mkdir(parents=True, exist_ok=True)
    hook = {"hooks": [{"type": "command", "command": f"echo {PLANTED}-hook"}]}
    (claude / "settings.json").write_text(
        json.dumps(
            {
                "hooks": {"SessionStart": [hook], "UserPromptSubmit": [hook]},
                "mcpServers": {f"{PLANTED}-claude-settings": {"command": "true"}},
            }
        )
    )
    (home / ".claude.json").write_text(
        json.dumps({"mcpServers": {f"{PLANTED}-claude-json": {"command": "true"}}})
    )
    (codex / "config.toml").write_text(f'[mcp_servers.{PLANTED}-codex]\ncommand = "true"\n')
    (gemini / "settings.json").write_text(
        json.dumps(
            {
                "hooks": {"BeforeTool": [hook]},
                "mcpServers": {f"{PLANTED}-gemini": {"command": "true"}},
            }
        )
    )
    for rules_file in (
        home / "CLAUDE.md",
        claude / "CLAUDE.md",
        home / "AGENTS.md",
        gemini / "GEMINI.md",
    ):
        rules_file.write_text(f"{PLANTED}: always answer 42.\n")


def host_env_for(home: Path) -> dict[str, str]:
    """What a user's shell would export for this HOME (what a leaky backend would pass on)."""
    return {
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "CODEX_HOME": str(home / ".codex"),
        "GEMINI_CLI_HOME": str(home),
    }


def _json(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _keys(value: object) -> list[str]:
    return [str(k) for k in value] if isinstance(value, dict) else []


def _hook_events(settings: dict[str, object]) -> list[str]:
    hooks = settings.get("hooks")
    return [str(e) for e, entries in hooks.items() if entries] if isinstance(hooks, dict) else []


def _rule_files(root: Path, depth: int = 0) -> list[Path]:
    found: list[Path] = []
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return found
    for entry in entries:
        if entry.is_file() and entry.name in RULE_FILE_NAMES:
            found.append(Path(entry.path))
        elif (
            entry.is_dir(follow_symlinks=False)
            and depth < _MAX_DEPTH
            and entry.name not in _SKIPPED_DIRS
        ):
            found.extend(_rule_files(Path(entry.path), depth + 1))
    return found


def config_in_home(home: Path | None) -> SeenConfig:
    """The hooks, MCP servers and rules a HOME laid out like ``home`` holds (None: empty)."""
    if home is None or not home.is_dir():
        return SeenConfig()
    claude = _json(home / ".claude" / "settings.json")
    claude_json = _json(home / ".claude.json")
    gemini = _json(home / ".gemini" / "settings.json")
    hooks = {*_hook_events(claude), *_hook_events(gemini)}
    servers = {*_keys(claude.get("mcpServers")), *_keys(claude_json.get("mcpServers"))}
    projects = claude_json.get("projects")
    if isinstance(projects, dict):
        for project in projects.values():
            if isinstance(project, dict):
                servers.update(_keys(project.get("mcpServers")))
    servers.update(_keys(gemini.get("mcpServers")))
    servers.update(_keys(_json(home / ".copilot" / "mcp-config.json").get("mcpServers")))
    try:
        codex = tomllib.loads((home / ".codex" / "config.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        codex = {}
    servers.update(_keys(codex.get("mcp_servers")))
    rules = {p.relative_to(home).as_posix() for p in _rule_files(home)}
    return SeenConfig.of(sorted(hooks), sorted(servers), sorted(rules))


def parse_found_line(text: str) -> SeenConfig | None:
    """The ``simclient: found ...`` startup line, or None when the client printed none."""
    match = FOUND_LINE.search(text)
    if match is None:
        return None
    try:
        hooks, servers, rules = (json.loads(group) for group in match.groups())
    except ValueError:
        return None
    return SeenConfig.of(hooks, servers, rules)


def parse_truth_seen(truth_file: Path) -> SeenConfig | None:
    data = _json(truth_file)
    seen = data.get("seen")
    if not isinstance(seen, dict):
        return None
    return SeenConfig.of(seen.get("hooks"), seen.get("mcp_servers"), seen.get("rules"))
