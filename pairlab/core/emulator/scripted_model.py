"""The scripted model: a catalog task's reference solution, played in a CLI's own tools.

Given the task (its reference edits, the files worth reading, the final answer), the
episode's seed and the request (:class:`Conversation`), :func:`next_turn` returns
what the model says next: one tool call, or the final answer. It is a pure function
of its inputs: the script is re-derived on every request and the calls already in
the request's history are replayed through it, so a retried request gets the same
turn and nothing is remembered between requests.

The script (every choice drawn once from the seed, so turns vary between episodes):

1. sometimes list the files (Claude ``Bash``; Codex ``exec_command``);
2. sometimes read the README; read the unchanged files the prompt names;
3. read each file the solution changes -- through the intervention's MCP
   ``read_file`` when the request offers it (first loading it with the CLI's tool
   search when it is deferred), else the built-in way (``Read``; ``cat`` through
   ``exec_command``); a preview that carries an ``expansion reference`` is expanded
   with ``expand`` before the file is edited (a file read only for context -- the
   README, the files the prompt names -- stays at its preview). Claude's ``Edit`` refuses a file not
   read with ``Read``, so a Claude edit of a file read through MCP first reads the
   changed lines with ``Read`` (``offset``/``limit``);
4. make the edits (Claude ``Edit`` / ``Write``; Codex ``apply_patch``, one patch per
   file or one for all);
5. sometimes compile the changed Python files as a check;
6. answer with the task's final answer.

A third-party intervention's tools are called only through its **usage recipe**
(``core/schemas/usage_recipe``), which the episode's registration hands to the treated
arms (``TaskScript.recipe``; never the baseline): the recipe's calls replace the listing
(step 1), each read (steps 2-3) or the check (step 5), at the same seeded points, in the
CLI's own vocabulary (Claude ``mcp__<server>__<tool>``; Codex the namespace
``mcp__<server with [^A-Za-z0-9_] as _>``), a deferred tool first loaded through the
CLI's tool search. Its ``setup`` calls come once, before the first replaced step. When
the request offers none of the step's first tool, the built-in step is played instead.
Without a recipe a third-party server's tools are never called (the floor: their
definitions only).

With a small drawn probability the episode plays the **wrong** variant: the last
change of the solution is left out and the final answer names nothing, so the
task's grader fails (tests prove it for every catalog task). A tool the request does
not offer is never called; when a needed built-in tool is missing the model answers
without it.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Generator
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

from pairlab.core.emulator.conversation import (
    CLAUDE_SEARCH_TOOL,
    CODEX_SEARCH_TOOL,
    Conversation,
    PastCall,
)
from pairlab.core.emulator.edits import FileChange, apply_patch_text, replacement
from pairlab.core.findings.contract import normalize_text
from pairlab.core.schemas.usage_recipe import EpisodeRecipe, RecipeStep, render
from pairlab.core.stats.seeds import make_rng

MCP_SERVER: Final = "token-optimizer"


def claude_mcp_prefix(server: str) -> str:
    """Claude Code names an MCP tool ``mcp__<server>__<tool>``."""
    return f"mcp__{server}__"


def codex_mcp_namespace(server: str) -> str:
    """Codex normalises a server name to [A-Za-z0-9_] in the namespace (measured: 0.163.0)."""
    return "mcp__" + re.sub(r"[^A-Za-z0-9_]", "_", server)


CLAUDE_MCP_PREFIX: Final = claude_mcp_prefix(MCP_SERVER)
CODEX_MCP_NAMESPACE: Final = codex_mcp_namespace(MCP_SERVER)
DEFAULT_WRONG_PROBABILITY: Final = 0.1
WRONG_FINAL_ANSWER: Final = "I made the change I could; I did not find more to do."
_EXPANSION_REF = re.compile(r"expansion reference:\s*(sha256:[0-9a-f]{64})")
_DELIVERED = re.compile(r"^\[(f-[0-9a-f]{16})\] \([a-z]+, [a-z]+\) (.+)$", re.M)
MCP_TOOLS: Final = ("read_file", "expand", "recall", "rate_finding", "wiki_write")

Variant = Literal["correct", "wrong"]


@dataclass(frozen=True)
class TaskScript:
    """A catalog task as the scripted model needs it (built by the emulator adapter)."""

    task_id: str
    changes: tuple[FileChange, ...]
    readme: str | None = None  # relative path of a README worth reading, if any
    context: tuple[str, ...] = ()  # unchanged files the prompt names (read before editing)
    final_answer: str | None = None
    # issue 18: the task prompt (the recall query), files read to orient oneself unless a
    # delivered useful finding covers them, and the catalog's ground truth per finding
    # claim (normalized): useful | useless | harmful
    query: str = ""
    explore: tuple[str, ...] = ()
    finding_effects: tuple[tuple[str, str], ...] = ()
    harvest: tuple[tuple[tuple[str, Any], ...], ...] = ()  # wiki_write arguments (full arm)
    # issue 26: the intervention's usage recipe for this task (treated arms only)
    recipe: EpisodeRecipe | None = None

    def effect_of(self, claim: str) -> str | None:
        key = normalize_text(claim)
        return next((effect for c, effect in self.finding_effects if c == key), None)


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any] | None = None  # JSON tools
    raw_input: str | None = None  # Codex custom (freeform) tools: apply_patch
    namespace: str | None = None  # Codex MCP tools
    kind: Literal["function", "custom", "tool_search"] = "function"

    @property
    def qualified(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


@dataclass(frozen=True)
class ModelTurn:
    step: int  # how many tool calls came before this turn
    variant: Variant
    text: str | None = None  # a preamble before a call, or the final answer
    call: ToolCall | None = None  # None: the final turn
    reasoning: str | None = None  # a short reasoning summary (Codex)

    @property
    def action(self) -> str:
        return self.call.qualified if self.call else "final-answer"


@dataclass(frozen=True)
class ScriptChoices:
    """Every seeded choice of one episode, drawn once and in a fixed order."""

    variant: Variant
    list_files: bool
    read_readme: bool
    one_patch: bool
    compile_check: bool

    @staticmethod
    def draw(task_id: str, seed: int, wrong_probability: float) -> ScriptChoices:
        rng = make_rng("pairlab.emulator.script.v1", task_id, str(seed))
        u = rng.random(5)
        return ScriptChoices(
            variant="wrong" if u[0] < wrong_probability else "correct",
            list_files=bool(u[1] < 0.5),
            read_readme=bool(u[2] < 0.5),
            one_patch=bool(u[3] < 0.5),
            compile_check=bool(u[4] < 0.4),
        )


@dataclass
class _Context:
    task: TaskScript
    conv: Conversation
    choices: ScriptChoices
    searched: set[str] = field(default_factory=set)  # servers loaded by the tool search
    recipe_setup_done: bool = False

    def abs_path(self, rel: str) -> str:
        cwd = (self.conv.cwd or ".").rstrip("/")
        return f"{cwd}/{rel}"


Script = Generator[ToolCall, PastCall, None]


def _searched_in_history(conv: Conversation, server: str) -> bool:
    """Whether an earlier turn called the tool search for ``server``'s tools: the script
    then calls it again at the same point on replay, even though the later request offers
    the tool directly. (Both CLIs' search queries name the server: ``select:mcp__<server>__…``,
    ``<server> <tools>``.)"""
    return any(
        p.name in (CLAUDE_SEARCH_TOOL, CODEX_SEARCH_TOOL) and server in str(p.arguments)
        for p in conv.history
    )


def _mcp_name(conv: Conversation, tool: str, server: str = MCP_SERVER) -> str:
    if conv.dialect == "claude":
        return claude_mcp_prefix(server) + tool
    return f"{codex_mcp_namespace(server)}/{tool}"


def _mcp_discoverable(conv: Conversation, server: str = MCP_SERVER) -> bool:
    """The request says the server's tools can be found with the search tool."""
    if conv.dialect == "claude":
        prefix = claude_mcp_prefix(server)
        return conv.search_tool == CLAUDE_SEARCH_TOOL and any(
            name.startswith(prefix) for name in conv.deferred
        )
    hint = conv.search_hint
    return conv.search_tool == CODEX_SEARCH_TOOL and (
        server in hint or codex_mcp_namespace(server) in hint
    )


def _search_call(
    conv: Conversation, server: str = MCP_SERVER, tools: tuple[str, ...] | None = None
) -> ToolCall:
    """Load ``tools`` (default: every deferred tool of the reference server) at once."""
    prefix = claude_mcp_prefix(server)
    if conv.dialect == "claude":
        names = {prefix + t for t in tools} if tools else None
        wanted = sorted(
            n for n in conv.deferred if n.startswith(prefix) and (names is None or n in names)
        )
        wanted = wanted or [prefix + t for t in (tools or ("read_file", "expand"))]
        return ToolCall(CLAUDE_SEARCH_TOOL, {"query": "select:" + ",".join(wanted)})
    tools = tools or MCP_TOOLS
    return ToolCall(
        CODEX_SEARCH_TOOL,
        {"query": f"{server} {' '.join(tools)}", "limit": len(tools)},
        kind="tool_search",
    )


def _mcp_tool(
    ctx: _Context, tool: str, server: str = MCP_SERVER, load: tuple[str, ...] | None = None
) -> Generator[ToolCall, PastCall, ToolCall | None]:
    """A call template for one of ``server``'s MCP tools, or None when the request does
    not offer it. A deferred tool is loaded with the CLI's tool search first (with the
    tools of ``load`` alongside, once per server)."""
    conv = ctx.conv
    name = _mcp_name(conv, tool, server)
    if server not in ctx.searched and (
        _searched_in_history(conv, server)
        or (not conv.has(name) and _mcp_discoverable(conv, server))
    ):
        yield _search_call(conv, server, load)
        ctx.searched.add(server)
    ref = conv.find(name)
    if ref is None:
        return None
    return ToolCall(ref.name, namespace=ref.namespace)


def _recipe_step(
    ctx: _Context, step: RecipeStep, file: str | None = None
) -> Generator[ToolCall, PastCall, bool]:
    """Play the recipe's calls for ``step`` (its ``setup`` first, once); False when there
    is no recipe for the step or the request does not offer its first tool -- the caller
    then plays the built-in step."""
    played = ctx.task.recipe
    calls = played.recipe.calls(step) if played is not None else []
    if played is None or not calls:
        return False
    server, load = played.server, played.recipe.tools
    first = yield from _mcp_tool(ctx, calls[0].tool, server, load)
    if first is None:
        return False
    fields = {"workspace": (ctx.conv.cwd or ".").rstrip("/") or "/"}
    if file is not None:
        fields["file"] = file
    if not ctx.recipe_setup_done:
        ctx.recipe_setup_done = True
        calls = [*played.recipe.setup, *calls]
    for call in calls:
        template = yield from _mcp_tool(ctx, call.tool, server, load)
        if template is not None:
            yield ToolCall(
                template.name, render(call.arguments, fields), namespace=template.namespace
            )
    return True


def _read(ctx: _Context, rel: str, *, to_edit: bool) -> Generator[ToolCall, PastCall, bool]:
    """Read one file; True when it was read through the intervention's MCP tool. A preview
    is expanded only when the file is about to be edited (the edit needs its full text);
    a file read for context is left at its preview."""
    template = yield from _mcp_tool(ctx, "read_file")
    if template is not None:
        result = yield ToolCall(template.name, {"path": rel}, namespace=template.namespace)
        match = _EXPANSION_REF.search(result.output or "")
        if match and to_edit:
            expand = yield from _mcp_tool(ctx, "expand")
            if expand is not None:
                yield ToolCall(expand.name, {"ref": match.group(1)}, namespace=expand.namespace)
        return True
    if (yield from _recipe_step(ctx, "read_file", rel)):
        return True
    if ctx.conv.dialect == "claude" and ctx.conv.has("Read"):
        yield ToolCall("Read", {"file_path": ctx.abs_path(rel)})
    elif ctx.conv.dialect == "codex" and ctx.conv.has("exec_command"):
        yield ToolCall("exec_command", {"cmd": f"cat {shlex.quote(rel)}"})
    return False


def _claude_edit(ctx: _Context, change: FileChange, read_via_mcp: bool) -> Script:
    path = ctx.abs_path(change.path)
    if change.before is None:
        if ctx.conv.has("Write"):
            yield ToolCall("Write", {"file_path": path, "content": change.after})
        return
    if not ctx.conv.has("Edit"):
        return
    old, new = replacement(change.before, change.after)
    if read_via_mcp and ctx.conv.has("Read"):
        # Edit needs a Read of the file in this session: read just the lines it replaces
        start = change.before[: change.before.index(old)].count("\n") + 1
        yield ToolCall("Read", {"file_path": path, "offset": start, "limit": old.count("\n") or 1})
    yield ToolCall("Edit", {"file_path": path, "old_string": old, "new_string": new})


def _recall(ctx: _Context) -> Generator[ToolCall, PastCall, list[tuple[str, str | None]]]:
    """Ask the intervention for findings when it offers ``recall``: (id, effect) of each
    delivered finding (effect: the catalog's ground truth for its claim)."""
    if not ctx.task.finding_effects and not ctx.task.explore and not ctx.task.harvest:
        return []  # a task without planted findings: the script is unchanged
    template = yield from _mcp_tool(ctx, "recall")
    if template is None:
        return []
    query = ctx.task.query or ctx.task.task_id
    result = yield ToolCall(template.name, {"query": query}, namespace=template.namespace)
    return [
        (m.group(1), ctx.task.effect_of(m.group(2)))
        for m in _DELIVERED.finditer(result.output or "")
    ]


def _rate(ctx: _Context, delivered: list[tuple[str, str | None]]) -> Script:
    """Rate each delivered finding that proved harmful (the catalog's ground truth)."""
    for finding_id, effect in delivered:
        if effect != "harmful":
            continue
        template = yield from _mcp_tool(ctx, "rate_finding")
        if template is None:
            return
        yield ToolCall(
            template.name,
            {"findingId": finding_id, "rating": "harmful", "reason": "it misled the change"},
            namespace=template.namespace,
        )


def _harvest(ctx: _Context) -> Script:
    """Record the task's harvest findings when the request offers ``wiki_write``."""
    for finding in ctx.task.harvest:
        template = yield from _mcp_tool(ctx, "wiki_write")
        if template is None:
            return
        yield ToolCall(template.name, dict(finding), namespace=template.namespace)


def _script(ctx: _Context) -> Script:
    task, choices, conv = ctx.task, ctx.choices, ctx.conv
    changes = list(task.changes)
    if choices.variant == "wrong" and changes:
        changes = changes[:-1]
    shell = "Bash" if conv.dialect == "claude" else "exec_command"
    delivered = yield from _recall(ctx)
    oriented = any(effect == "useful" for _, effect in delivered)
    if oriented:  # a useful finding replaces the orientation: no listing, README, exploring
        choices = replace(choices, list_files=False, read_readme=False)
    else:
        for path in task.explore:
            yield from _read(ctx, path, to_edit=False)
    listed = choices.list_files and (yield from _recipe_step(ctx, "list_files"))
    if choices.list_files and not listed and conv.has(shell):
        if conv.dialect == "claude":
            yield ToolCall("Bash", {"command": "ls -R", "description": "List the project's files"})
        else:
            yield ToolCall("exec_command", {"cmd": "ls -R"})
    if choices.read_readme and task.readme:
        yield from _read(ctx, task.readme, to_edit=False)
    for path in task.context:
        yield from _read(ctx, path, to_edit=False)
    via_mcp: dict[str, bool] = {}
    for change in task.changes:  # the wrong variant still reads what it leaves out
        if change.before is not None:
            via_mcp[change.path] = yield from _read(ctx, change.path, to_edit=True)
    if conv.dialect == "claude":
        for change in changes:
            yield from _claude_edit(ctx, change, via_mcp.get(change.path, False))
    elif changes and conv.has("apply_patch"):
        groups = [changes] if choices.one_patch else [[c] for c in changes]
        for group in groups:
            yield ToolCall("apply_patch", raw_input=apply_patch_text(group), kind="custom")
    py_files = [c.path for c in changes if c.path.endswith(".py")]
    checked = choices.compile_check and py_files and (yield from _recipe_step(ctx, "final_check"))
    if choices.compile_check and py_files and not checked and conv.has(shell):
        # ast.parse checks the syntax without writing __pycache__ into the workspace
        command = (
            "python3 -c 'import ast, sys; [ast.parse(open(p).read(), p) for p in sys.argv[1:]]' "
            + " ".join(shlex.quote(p) for p in py_files)
        )
        if conv.dialect == "claude":
            yield ToolCall("Bash", {"command": command, "description": "Check the files compile"})
        else:
            yield ToolCall("exec_command", {"cmd": command})
    yield from _rate(ctx, delivered)
    if choices.variant == "correct":
        yield from _harvest(ctx)


def final_text(task: TaskScript, variant: Variant) -> str:
    if variant == "wrong":
        return WRONG_FINAL_ANSWER
    return task.final_answer or "Done: the requested change is made."


def next_turn(
    task: TaskScript,
    conv: Conversation,
    *,
    seed: int,
    wrong_probability: float = DEFAULT_WRONG_PROBABILITY,
) -> ModelTurn:
    """The model's next turn for this request (pure; replays the request's history)."""
    choices = ScriptChoices.draw(task.task_id, seed, wrong_probability)
    ctx = _Context(task=task, conv=conv, choices=choices)
    script = _script(ctx)
    step = 0
    try:
        call = next(script)
        for past in conv.history:
            step += 1
            call = script.send(past)
    except StopIteration:
        return ModelTurn(step=step, variant=choices.variant, text=final_text(task, choices.variant))
    preamble = _preamble(call, step)
    return ModelTurn(
        step=step,
        variant=choices.variant,
        text=preamble,
        call=call,
        reasoning=f"Step {step + 1}: {preamble}" if conv.dialect == "codex" else None,
    )


def _preamble(call: ToolCall, step: int) -> str:
    """A short line before each call, as models write them (varies with the call)."""
    args = call.arguments or {}
    target = args.get("path") or args.get("file_path") or args.get("command") or args.get("cmd")
    if call.kind == "custom":
        return "Applying the change."
    if call.kind == "tool_search" or call.name == CLAUDE_SEARCH_TOOL:
        return "Loading the file tools."
    if call.name in ("Edit", "Write"):
        return f"Editing {target}." if target else "Editing."
    if call.name == "expand":
        return "Expanding the preview."
    if call.name == "recall":
        return "Checking what earlier sessions found."
    if call.name == "rate_finding":
        return "Rating a finding that misled me."
    if isinstance(target, str) and target:
        return f"{'Looking at' if step == 0 else 'Next:'} {target}"
    return "Looking at the project." if step == 0 else "Checking."


__all__ = [
    "CLAUDE_MCP_PREFIX",
    "CODEX_MCP_NAMESPACE",
    "DEFAULT_WRONG_PROBABILITY",
    "MCP_SERVER",
    "WRONG_FINAL_ANSWER",
    "ModelTurn",
    "ScriptChoices",
    "TaskScript",
    "ToolCall",
    "claude_mcp_prefix",
    "codex_mcp_namespace",
    "final_text",
    "next_turn",
]
