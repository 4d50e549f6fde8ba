"""Typer options derived from a pydantic model's fields: one source of defaults, help and
bounds for a command whose options are a model's parameters (``pairlab eval``).

:func:`field_option` reads a field's default, description (the help) and ``ge``/``le``
bounds (typer's ``min``/``max``; open bounds ``gt``/``lt`` stay the model's to check:
its error is an invalid input, exit 2, like typer's); :func:`command_with` gives a
function the signature typer reads, so the options are declared once, in the model.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal, get_args, get_origin

import annotated_types
import typer
from pydantic import BaseModel
from pydantic_core import PydanticUndefined


def field_default(model: type[BaseModel], name: str) -> Any:
    """The default of ``model``'s field ``name`` (its factory's value when it has one)."""
    info = model.model_fields[name]
    if info.default_factory is not None:
        return info.default_factory()  # type: ignore[call-arg]
    return None if info.default is PydanticUndefined else info.default


def field_option(
    model: type[BaseModel],
    name: str,
    *,
    param: str | None = None,
    flags: Sequence[str] = (),
    kind: Any = None,
    default: Any = PydanticUndefined,
    help: str | None = None,
    hidden: bool = False,
) -> inspect.Parameter:
    """A typer option for ``model.name``: named ``param`` (default ``name``, ``--name``
    with dashes unless ``flags``), of type ``kind`` (default: the field's), with the
    field's default, description and closed bounds unless given (a ``Literal`` field is
    text, its choices named in the help)."""
    info = model.model_fields[name]
    described = help or info.description
    if kind is None and get_origin(info.annotation) is Literal:  # choices: text the model checks
        kind = str
        described = f"{described} ({' or '.join(get_args(info.annotation))})"
    bounds: dict[str, Any] = {}
    for meta in info.metadata:
        if isinstance(meta, annotated_types.Ge):
            bounds["min"] = meta.ge
        elif isinstance(meta, annotated_types.Le):
            bounds["max"] = meta.le
    option = typer.Option(*flags, help=described, hidden=hidden, **bounds)
    value = field_default(model, name) if default is PydanticUndefined else default
    annotation = Annotated[kind if kind is not None else info.annotation, option]  # type: ignore[valid-type]
    return inspect.Parameter(
        param or name, inspect.Parameter.KEYWORD_ONLY, default=value, annotation=annotation
    )


def plain_option(
    param: str, kind: Any, default: Any, *flags: str, **option: Any
) -> inspect.Parameter:
    """A typer option of the command's own (not a model field)."""
    annotation = Annotated[kind, typer.Option(*flags, **option)]
    return inspect.Parameter(
        param, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
    )


def command_with(
    body: Callable[..., None], parameters: Sequence[inspect.Parameter], doc: str
) -> Callable[..., None]:
    """``body`` (called with every option by keyword) with the signature and help typer reads."""

    def command(**options: Any) -> None:
        body(**options)

    command.__signature__ = inspect.Signature(list(parameters))  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": None}
    command.__doc__ = doc
    command.__name__ = body.__name__
    return command
