"""Usage recipes against the server's real ``tools/list`` (issue 26 item 4).

A recipe (``core/schemas/usage_recipe``) names tools and arguments the scripted model
will send; before any episode runs, every call is checked against what the server
really lists (``adapters/mcp_tools_list`` starts it and asks):

* a tool the server does not list -> ``recipe-unknown-tool``;
* arguments that do not validate against the tool's ``inputSchema`` (JSON Schema, the
  dialect its ``$schema`` names, else the latest) -> ``recipe-invalid-arguments``.
  Placeholders are filled with stand-ins first (``{workspace}`` an absolute path,
  ``{file}`` a relative one), so a templated string is checked as the string it becomes.

:func:`require_valid_recipes` raises one :class:`InvalidInputError` (exit 2) naming
every problem, with the reason code of the first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import jsonschema  # type: ignore[import-untyped]

from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.schemas.usage_recipe import RECIPE_STEPS, TaskRecipe, render

STAND_INS: Final = {"workspace": "/workspace/task", "file": "src/module.py"}


@dataclass(frozen=True)
class RecipeProblem:
    task_id: str
    step: str
    tool: str
    reason: ReasonCode
    detail: str

    def line(self) -> str:
        return f"{self.task_id}.{self.step}: {self.tool}: {self.detail}"


def _schema_errors(schema: Mapping[str, Any], arguments: Any) -> list[str]:
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return [f"the server's inputSchema is not valid JSON Schema ({exc.message})"]
    found = sorted(cls(schema).iter_errors(arguments), key=lambda e: list(e.path))
    return [
        (f"{'/'.join(str(p) for p in e.path)}: " if e.path else "") + str(e.message) for e in found
    ]


def check_recipes(
    recipes: Mapping[str, TaskRecipe], tools: Iterable[Mapping[str, Any]]
) -> list[RecipeProblem]:
    """Every problem of ``recipes`` against the server's listed ``tools`` (its
    ``tools/list`` result's ``tools``); empty when they all fit."""
    schemas = {
        str(t["name"]): t.get("inputSchema") or {"type": "object"}
        for t in tools
        if isinstance(t, Mapping) and isinstance(t.get("name"), str)
    }
    problems: list[RecipeProblem] = []
    for task_id, recipe in sorted(recipes.items()):
        for step in RECIPE_STEPS:
            for call in recipe.calls(step):
                schema = schemas.get(call.tool)
                if schema is None:
                    known = ", ".join(sorted(schemas)) or "none"
                    problems.append(
                        RecipeProblem(
                            task_id,
                            step,
                            call.tool,
                            ReasonCode.RECIPE_UNKNOWN_TOOL,
                            f"the server lists no such tool (it lists: {known})",
                        )
                    )
                    continue
                arguments = render(call.arguments, STAND_INS)
                for error in _schema_errors(schema, arguments):
                    problems.append(
                        RecipeProblem(
                            task_id,
                            step,
                            call.tool,
                            ReasonCode.RECIPE_INVALID_ARGUMENTS,
                            f"arguments refused by its inputSchema: {error}",
                        )
                    )
    return problems


def require_valid_recipes(
    intervention_id: str, recipes: Mapping[str, TaskRecipe], tools: Sequence[Mapping[str, Any]]
) -> None:
    """Raise ``InvalidInputError`` naming every problem (reason: the first one's)."""
    problems = check_recipes(recipes, tools)
    if problems:
        raise InvalidInputError(
            f"intervention '{intervention_id}': usage recipe refused against the server's "
            "tools/list: " + "; ".join(p.line() for p in problems),
            reason=problems[0].reason,
        )


__all__ = ["STAND_INS", "RecipeProblem", "check_recipes", "require_valid_recipes"]
