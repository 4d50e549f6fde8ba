"""Model bases shared by every contract."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class StrictModel(BaseModel):
    """snake_case in Python and on the wire; unknown fields rejected."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class CamelModel(BaseModel):
    """snake_case in Python, camelCase on the wire (populate by either); unknown fields rejected."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        frozen=True,
        alias_generator=to_camel,
        populate_by_name=True,
    )
