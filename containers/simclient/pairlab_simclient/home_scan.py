"""What user configuration the simulated client would load from HOME.

The isolation probe relies on this: a baseline episode must start with no hooks,
MCP servers or rule files. Scanned: ``$CLAUDE_CONFIG_DIR/settings.json`` (hooks,
mcpServers), ``$HOME/.claude.json`` (mcpServers, also per project),
``$CODEX_HOME/config.toml`` ([mcp_servers.*]), ``$GEMINI_CLI_HOME/.gemini/settings.json``
(hooks, mcpServers), and rule files named CLAUDE.md / AGENTS.md / GEMINI.md under
HOME and the client config dirs.
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from pairlab_simclient.episode_env import EpisodeEnv

RULE_FILE_NAMES = ("CLAUDE.md", "AGENTS.md", "GEMINI.md")
# Transcript/session trees can be large and never hold rules.
SKIPPED_DIRS = {"projects", "sessions", "archived_sessions", "tmp", "node_modules", ".git"}
MAX_DEPTH = 4


@dataclass(frozen=True)
class SeenConfig:
    hooks: list[str]
    mcp_servers: list[str]
    rules: list[str]

    def as_dict(self) -> dict[str, list[str]]:
        return {"hooks": self.hooks, "mcp_servers": self.mcp_servers, "rules": self.rules}

    def startup_line(self) -> str:
        def fmt(items: list[str]) -> str:
            return json.dumps(items, separators=(",", ":"))

        return f"simclient: found hooks={fmt(self.hooks)} mcp_servers={fmt(self.mcp_servers)} rules={fmt(self.rules)}"


def _read_json(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _names(value: object) -> list[str]:
    return [str(k) for k in value] if isinstance(value, dict) else []


def _hook_events(settings: dict[str, object]) -> list[str]:
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return []
    return [str(event) for event, entries in hooks.items() if entries]


def _display(path: Path, home: Path) -> str:
    try:
        return str(path.relative_to(home))
    except ValueError:
        return str(path)


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
            and depth < MAX_DEPTH
            and entry.name not in SKIPPED_DIRS
        ):
            found.extend(_rule_files(Path(entry.path), depth + 1))
    return found


def scan_home(env: EpisodeEnv) -> SeenConfig:
    hooks: set[str] = set()
    servers: set[str] = set()
    claude_settings = _read_json(env.claude_config_dir / "settings.json")
    hooks.update(_hook_events(claude_settings))
    servers.update(_names(claude_settings.get("mcpServers")))
    claude_json = _read_json(env.home / ".claude.json")
    servers.update(_names(claude_json.get("mcpServers")))
    projects = claude_json.get("projects")
    if isinstance(projects, dict):
        for project in projects.values():
            if isinstance(project, dict):
                servers.update(_names(project.get("mcpServers")))
    gemini_settings = _read_json(env.gemini_home / ".gemini" / "settings.json")
    hooks.update(_hook_events(gemini_settings))
    servers.update(_names(gemini_settings.get("mcpServers")))
    try:
        codex_config = tomllib.loads((env.codex_home / "config.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        codex_config = {}
    servers.update(_names(codex_config.get("mcp_servers")))

    rules: set[str] = set()
    roots = [env.home, env.claude_config_dir, env.codex_home, env.gemini_home / ".gemini"]
    for root in dict.fromkeys(r.resolve() for r in roots if r.is_dir()):
        for path in _rule_files(root):
            rules.add(_display(path.resolve(), env.home.resolve()))
    return SeenConfig(sorted(hooks), sorted(servers), sorted(rules))
