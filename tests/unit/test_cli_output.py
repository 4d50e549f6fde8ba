"""`pairlab.cli.output`: orjson's bytes hold what the standard encoder wrote."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path

import numpy as np

from pairlab.cli.output import encode_json
from pairlab.core.errors import ReasonCode


@dataclasses.dataclass
class _Point:
    x: int


def test_the_values_are_those_of_json_dumps_with_default_str() -> None:
    payload = {
        "float64": np.float64(1.25),
        "int64": np.int64(3),
        "when": dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
        "point": _Point(1),
        "path": Path("/runs/a"),
        "reason": ReasonCode.NOT_FOUND,
        7: "int key",
        "text": "naïve ✓",
        "small": 1e-05,
        "nested": [{"none": None, "flag": True}],
    }
    standard = json.loads(json.dumps(payload, default=str))
    assert json.loads(encode_json(payload)) == standard
    assert json.loads(encode_json(payload, pretty=False)) == standard
    assert b"\n  " in encode_json(payload) and b"\n" not in encode_json(payload, pretty=False)


def test_an_int_beyond_64_bits_falls_back_to_the_standard_encoder() -> None:
    payload = {"big": 2**70, "list": [1, 2]}
    assert json.loads(encode_json(payload, pretty=False)) == payload
    assert encode_json(payload, pretty=False) == b'{"big":1180591620717411303424,"list":[1,2]}'


def test_nan_is_null_not_an_invalid_token() -> None:
    assert encode_json({"x": float("nan")}, pretty=False) == b'{"x":null}'
