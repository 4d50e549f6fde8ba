"""Passing large arguments to tasks without Prefect walking them."""

from __future__ import annotations

from typing import TypeVar, cast

from prefect.utilities.annotations import quote

T = TypeVar("T")


def quoted(value: T) -> T:
    """``value`` wrapped in Prefect's ``quote``: the task receives it unchanged, and
    Prefect does not walk it looking for futures to resolve (for the large pydantic
    arguments of the episode tasks that walk was about half of a task run's
    overhead; bench/README.md, Orchestration). Typed as ``T`` because that is what
    the task sees."""
    return cast(T, quote(value))
