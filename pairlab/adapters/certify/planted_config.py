"""The full user and project configuration ``pairlab certify`` plants for a real CLI.

Every item a Claude Code or Codex user could have installed is planted once, in the
place the CLI reads it from: the **user's** config in a stand-in for the host HOME
(whose variables the backend is given as the host environment: a fresh episode HOME
must hide all of it) and the **project's** config in the workspace (which travels
with the repository: only the CLI's flags can keep it out). Each item carries a
side effect that shows whether the CLI loaded it:

* ``marker`` -- a hook or an MCP server that runs creates
  ``$PAIRLAB_STATE_DIR/pairlab-planted/<slug>`` (collected with the episode);
* ``text`` -- the string ``pairlab-planted:<slug>`` reaches a model request (memory
  files, rules, skills, commands, agents, instructions, a rule's refusal message);
* ``mcp`` -- the MCP server ``pairlab-planted-<slug>`` is offered to the model
  (its tools in a Claude request, a source of Codex's tool search).

**The intervention's own server, planted under its own name.** A user who has
installed the server being measured has it in their user config already (``claude mcp
add``, ``~/.codex/config.toml``). The user's MCP config file therefore also holds an
entry named like the certified intervention's server (``intervention``: its
``mcp_name``), started by the planted script: the item ``user-intervention-server``,
seen by its ``marker`` (its name is the treated arms' own, so a request offering it
proves nothing by name; the marker shows that the CLI started the *planted* entry).
The baseline must not start it; in a treated arm the arm's own wiring must win over it.
User scope only, measured: a project entry of the same name shadows the user's in
Claude Code, so with both planted the user's could never be shown loaded (the project
scope keeps its own planted MCP server, under another name).

Which items, and where, each CLI's record says (``RealCli.plant_config`` in
``adapters.clients``, writing through a :class:`Planter`). :func:`plant` writes them
and returns the items; :mod:`certify_live` reads the
evidence back from the emulator's request log and the collected state dir.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from pairlab.adapters.certify import planted_mcp_server
from pairlab.adapters.clients.base import TextKind

MARKER_DIR: Final = "pairlab-planted"  # under the episode's state dir
TEXT_PREFIX: Final = "pairlab-planted:"
SERVER_PREFIX: Final = "pairlab-planted-"
SCRIPT_DIR: Final = ".pairlab-planted"  # next to the planted configs (HOME, workspace)
SCRIPT_NAME: Final = "planted_mcp_server.py"
HOOK_EVENTS: Final = ("SessionStart", "UserPromptSubmit", "PreToolUse", "Stop")

Scope = Literal["user", "project"]
Evidence = Literal["marker", "text", "mcp"]


@dataclass(frozen=True)
class PlantedItem:
    slug: str
    scope: Scope
    path: str  # relative to the host HOME (user) or the workspace (project)
    what: str
    evidence: tuple[Evidence, ...]

    @property
    def text(self) -> str:
        return f"{TEXT_PREFIX}{self.slug}"

    @property
    def server(self) -> str:
        return f"{SERVER_PREFIX}{self.slug}"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _hook_command(slug: str) -> str:
    marker = f'"${{PAIRLAB_STATE_DIR:?}}/{MARKER_DIR}"'
    return f"mkdir -p {marker} && touch {marker}/{slug}"


def _hooks(slug: str) -> dict[str, object]:
    entry = [{"hooks": [{"type": "command", "command": _hook_command(slug)}]}]
    return {"hooks": {event: entry for event in HOOK_EVENTS}}


def _server_argv(scope: Scope, home: Path, slug: str) -> list[str]:
    """How a planted config starts the planted server (the workspace path differs per
    backend, so project configs find it through the episode's own variable)."""
    if scope == "user":
        return ["python3", str(home / SCRIPT_DIR / SCRIPT_NAME), slug]
    script = f'"$PAIRLAB_WORKSPACE_ROOT/{SCRIPT_DIR}/{SCRIPT_NAME}"'
    return ["sh", "-c", f"exec python3 {script} {slug}"]


def _skill(slug: str) -> str:
    return (
        f"---\nname: {SERVER_PREFIX}{slug}\ndescription: {TEXT_PREFIX}{slug} "
        "(a planted skill)\n---\nPlanted by pairlab certify.\n"
    )


def _markdown(slug: str, kind: str) -> str:
    return f"---\ndescription: {TEXT_PREFIX}{slug} (a planted {kind})\n---\n{TEXT_PREFIX}{slug}\n"


def _rule(slug: str) -> str:
    return _markdown(slug, "rule")


def _command(slug: str) -> str:
    return _markdown(slug, "command")


class Planter:
    """Writes planted items under the stand-in HOME (user) or the workspace (project) and
    records each (``items``); each CLI's ``plant_config`` says which items and where."""

    hook_events: tuple[str, ...] = HOOK_EVENTS

    def __init__(self, home: Path, workspace: Path, intervention: str | None = None) -> None:
        self.home, self.workspace = home, workspace
        self.intervention = intervention  # the certified server's name (planted once per scope)
        self.items: list[PlantedItem] = []

    def root(self, scope: Scope) -> Path:
        return self.home if scope == "user" else self.workspace

    def add(
        self, scope: Scope, slug: str, path: str, what: str, *evidence: Evidence
    ) -> PlantedItem:
        item = PlantedItem(f"{scope}-{slug}", scope, path, what, tuple(evidence))
        self.items.append(item)
        return item

    def text(self, scope: Scope, slug: str, path: str, what: str, kind: TextKind) -> None:
        item = self.add(scope, slug, path, what, "text")
        _write(self.root(scope) / path, _TEXTS[kind](item.slug))

    def hooks(self, scope: Scope, slug: str, path: str, what: str) -> None:
        item = self.add(scope, slug, path, what, "marker")
        _write(self.root(scope) / path, json.dumps(_hooks(item.slug), indent=2))

    def _intervention_item(self, scope: Scope, path: str) -> tuple[str, list[str]] | None:
        """The intervention's server under its own name, once, in the user's config:
        (name, argv); None elsewhere."""
        name = self.intervention
        done = any(i.slug == f"{scope}-intervention-server" for i in self.items)
        if name is None or scope != "user" or done:
            return None
        what = f"the intervention's own server, under its name '{name}'"
        item = self.add(scope, "intervention-server", path, what, "marker")
        return name, _server_argv(scope, self.home, item.slug)

    def claude_mcp(self, scope: Scope, slug: str, path: str, what: str) -> None:
        item = self.add(scope, slug, path, what, "marker", "mcp")
        command, *args = _server_argv(scope, self.home, item.slug)
        servers = {item.server: {"type": "stdio", "command": command, "args": args}}
        own = self._intervention_item(scope, path)
        if own is not None:
            name, (command, *args) = own
            servers[name] = {"type": "stdio", "command": command, "args": args}
        _write(self.root(scope) / path, json.dumps({"mcpServers": servers}, indent=2))

    def codex_config(self, scope: Scope, path: str, *, instructions: bool) -> None:
        """config.toml: an MCP server, and developer instructions (a second item). Only one
        layer gets instructions: the workspace's value would shadow the user's."""
        server = self.add(scope, "config-mcp-server", path, "[mcp_servers.*]", "marker", "mcp")
        toml = ""
        if instructions:
            notes = self.add(scope, "config-instructions", path, "developer_instructions", "text")
            toml = f"developer_instructions = {json.dumps(notes.text)}\n\n"
        command, *args = _server_argv(scope, self.home, server.slug)
        toml += (
            f"[mcp_servers.{server.server}]\n"
            f"command = {json.dumps(command)}\n"
            f"args = {json.dumps(args)}\n"
            'env_vars = ["PAIRLAB_STATE_DIR", "PAIRLAB_WORKSPACE_ROOT"]\n'
        )
        own = self._intervention_item(scope, path)
        if own is not None:
            name, (command, *args) = own
            toml += (
                f"\n[mcp_servers.{json.dumps(name)}]\n"
                f"command = {json.dumps(command)}\n"
                f"args = {json.dumps(args)}\n"
                'env_vars = ["PAIRLAB_STATE_DIR", "PAIRLAB_WORKSPACE_ROOT"]\n'
            )
        _write(self.root(scope) / path, toml)

    def codex_rules(self, scope: Scope, path: str, command: str) -> None:
        item = self.add(scope, "rules", path, f"execpolicy forbidding `{command}`", "text")
        rule = (
            f'prefix_rule(pattern = ["{command}"], decision = "forbidden", '
            f"justification = {json.dumps(item.text)})\n"
        )
        _write(self.root(scope) / path, rule)

    def scripts(self) -> None:
        source = Path(planted_mcp_server.__file__)
        for root in (self.home, self.workspace):
            (root / SCRIPT_DIR).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, root / SCRIPT_DIR / SCRIPT_NAME)


def _agent(slug: str) -> str:
    return (
        f"---\nname: {SERVER_PREFIX}{slug}\ndescription: {TEXT_PREFIX}{slug} "
        f"(a planted subagent)\n---\n{TEXT_PREFIX}{slug}\n"
    )


def _memory(slug: str) -> str:
    return f"{TEXT_PREFIX}{slug}\n"


_TEXTS: Final[dict[TextKind, Callable[[str], str]]] = {
    "memory": _memory,
    "skill": _skill,
    "rule": _rule,
    "command": _command,
    "agent": _agent,
}


def plant(
    client: str, home: Path, workspace: Path, intervention: str | None = None
) -> list[PlantedItem]:
    """Plant ``client``'s full user config into ``home`` and project config into
    ``workspace``; with ``intervention`` (a server name), that server too, in every MCP
    config file planted."""
    from pairlab.adapters.clients.registry import REAL_CLIS

    cli = REAL_CLIS.get(client)
    if cli is None:
        raise ValueError(f"no planted config for client '{client}'")
    planter = Planter(home, workspace, intervention)
    planter.scripts()
    cli.plant_config(planter)
    return planter.items


__all__ = ["HOOK_EVENTS", "MARKER_DIR", "PlantedItem", "Planter", "plant"]
