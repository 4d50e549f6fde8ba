"""Usage recipes: which of an intervention's tool calls replace which built-in step of
the scripted model, per catalog task (the manifest's ``recipes`` field).

A scripted model can measure two things about a third-party MCP server: the context
cost of its tool definitions on every request, and the real payloads of its tools when
they are called. Without a recipe only the first (the floor); a recipe says where the
scripted model calls the server's tools instead of its built-in ones
(``core/emulator/scripted_model``). A recipe changes *which tools* play a step, never
*whether* the step is played: the seeded choices are the baseline's, so a pair's two
episodes differ only by the replacement.

The steps a recipe can replace (each a list of calls, played in order):

* ``list_files`` -- the orientation listing (``ls -R``), in the episodes that list;
* ``read_file`` -- each read of a file (the README, the files the prompt names, the
  files the solution changes), in every episode; ``{file}`` is the file's path relative
  to the working directory;
* ``final_check`` -- the check after the edits (the compile check of the changed Python
  files), in the episodes that check;
* ``setup`` -- not a replacement: calls played once, just before the first call of any
  other step (e.g. build an index).

Arguments are JSON values; in their strings ``{workspace}`` becomes the absolute path
of the working directory and ``{file}`` (``read_file`` only) the file being read. Any
other ``{name}`` is refused (``invalid-intervention``), so a typo never reaches a tool.
Whether a recipe's tools exist and its arguments fit their ``inputSchema`` is checked
against the server's real ``tools/list`` (``core/recipe_check``), before any episode.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, Final, Literal

from pydantic import Field, field_validator, model_validator

from pairlab.core.schemas.base import StrictModel

RecipeStep = Literal["setup", "list_files", "read_file", "final_check"]
RECIPE_STEPS: Final[tuple[RecipeStep, ...]] = ("setup", "list_files", "read_file", "final_check")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_TOOL = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def render(value: Any, fields: Mapping[str, str]) -> Any:
    """``value`` with each ``{name}`` in its strings replaced from ``fields``."""
    if isinstance(value, str):
        return _PLACEHOLDER.sub(lambda m: fields.get(m.group(1), m.group(0)), value)
    if isinstance(value, Mapping):
        return {k: render(v, fields) for k, v in value.items()}
    if isinstance(value, list):
        return [render(v, fields) for v in value]
    return value


class RecipeCall(StrictModel):
    """One call of the intervention's tool: its name as the server lists it (no
    ``mcp__`` prefix) and its arguments (templated)."""

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)

    @field_validator("tool")
    @classmethod
    def _tool_shape(cls, value: str) -> str:
        if not _TOOL.match(value):
            raise ValueError(f"tool {value!r}: a tool name as the server lists it")
        return value

    def placeholders(self) -> set[str]:
        return {m.group(1) for s in _strings(self.arguments) for m in _PLACEHOLDER.finditer(s)}


class TaskRecipe(StrictModel):
    """The replacements for one catalog task (at least one step besides ``setup``)."""

    setup: list[RecipeCall] = Field(default_factory=list)
    list_files: list[RecipeCall] = Field(default_factory=list)
    read_file: list[RecipeCall] = Field(default_factory=list)
    final_check: list[RecipeCall] = Field(default_factory=list)

    @model_validator(mode="after")
    def _placeholders(self) -> TaskRecipe:
        if not (self.list_files or self.read_file or self.final_check):
            raise ValueError("a recipe replaces at least one of list_files, read_file, final_check")
        for step in RECIPE_STEPS:
            allowed = {"workspace", "file"} if step == "read_file" else {"workspace"}
            for call in self.calls(step):
                unknown = sorted(call.placeholders() - allowed)
                if unknown:
                    raise ValueError(
                        f"{step}: {call.tool}: unknown placeholder(s) "
                        f"{', '.join('{' + u + '}' for u in unknown)} "
                        f"(allowed here: {', '.join('{' + a + '}' for a in sorted(allowed))})"
                    )
        return self

    def calls(self, step: RecipeStep) -> list[RecipeCall]:
        return list(getattr(self, step))

    @property
    def tools(self) -> tuple[str, ...]:
        """Every tool the recipe calls, in first-use order."""
        return tuple(dict.fromkeys(c.tool for s in RECIPE_STEPS for c in self.calls(s)))


class EpisodeRecipe(StrictModel):
    """What an episode's registration hands the scripted model: the task's recipe and
    the name the CLIs list the server under (its tools reach the model as
    ``mcp__<server>__<tool>``). Only treated arms of an intervention with a recipe for the
    task get one; the baseline never."""

    server: str = Field(min_length=1)
    recipe: TaskRecipe


__all__ = [
    "RECIPE_STEPS",
    "EpisodeRecipe",
    "RecipeCall",
    "RecipeStep",
    "TaskRecipe",
    "render",
]
