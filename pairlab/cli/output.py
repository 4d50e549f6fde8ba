"""Shared CLI output helpers: JSON to stdout, human text via rich.

JSON is encoded with orjson (issue 28: Python's pure-Python encoder spent ~11 s of a 25 s
``aggregate --json`` writing 33 MB of indented JSON). The content is what
``json.dumps(payload, default=str)`` gave: values orjson would encode differently are
handed to :func:`_as_before` first (datetimes and dataclasses as ``str()``, float
subclasses such as NumPy's ``float64`` as numbers, anything else unknown as ``str()``);
a payload orjson refuses (an int beyond 64 bits) falls back to :mod:`json`. Number
spelling may differ (``1e-05`` is now ``1e-5``) and non-ASCII text is written as UTF-8
rather than ``\\uXXXX`` escapes: the same JSON values either way. Two deliberate
differences: NaN, which ``json.dumps`` wrote as the invalid token ``NaN``, is written as
``null``; a plain :class:`enum.Enum` is written as its value (``str``/``int`` enums, the
reason codes, were always their value).

``pretty=True`` (the default for most commands: their output is small and read by people)
indents by two spaces; ``pairlab aggregate --json`` is compact unless ``--pretty``.

The bytes are written whole or the command fails: a short write (``write`` on a pipe whose
reader has gone, or on a disk that fills, returns the count it managed) is retried with
the rest, whose error then ends the command - EPIPE quietly with status 1 (typer), any
other (ENOSPC) as a traceback, status 1, as a write that fails outright always did.
(``typer.echo`` ignored the count: ``> file`` on a disk that filled and ``| head`` ended
with status 0 and part of the JSON.)
"""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import IO, Any, Final

import orjson
import typer

from pairlab.core.errors import ExecutionError, ReasonCode

_OPTIONS: Final = (
    orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
)


def _as_before(value: Any) -> Any:
    """What ``json.dumps(default=str)`` made of a value orjson does not encode the same way."""
    if isinstance(value, float):  # a float subclass (numpy.float64): json wrote the number
        return float(value)
    if dataclasses.is_dataclass(value) or not isinstance(value, (int, str, dict, list)):
        return str(value)
    raise TypeError(f"cannot encode {type(value).__name__}")


def _fallback_default(value: Any) -> Any:
    if isinstance(value, orjson.Fragment):  # pre-encoded text only orjson can place
        raise TypeError("an orjson.Fragment needs orjson to encode it")
    return str(value)


def orjson_compact(payload: Any) -> bytes:
    """``payload`` as compact JSON by orjson alone, as :func:`encode_json` writes it when
    orjson accepts it (:class:`orjson.JSONEncodeError` when it does not)."""
    return orjson.dumps(payload, default=_as_before, option=_OPTIONS)


def encode_json(payload: Any, *, pretty: bool = True, newline: bool = False) -> bytes:
    """``payload`` as JSON bytes (UTF-8), indented by two spaces when ``pretty``, with a
    line break after it when ``newline`` (appended by orjson: no copy of the text)."""
    options = _OPTIONS | (orjson.OPT_INDENT_2 if pretty else 0)
    try:
        return orjson.dumps(
            payload,
            default=_as_before,
            option=options | (orjson.OPT_APPEND_NEWLINE if newline else 0),
        )
    except orjson.JSONEncodeError:  # e.g. an int beyond 64 bits: the standard encoder
        text = json.dumps(
            payload,
            indent=2 if pretty else None,
            separators=None if pretty else (",", ":"),
            default=_fallback_default,
            ensure_ascii=False,
        )
        return (text + ("\n" if newline else "")).encode("utf-8")


def binary_stdout() -> IO[bytes] | None:
    """The binary stream under ``sys.stdout`` (its pending text flushed first), if any."""
    stream = sys.stdout
    if stream is None:
        return None
    stream.flush()
    return getattr(stream, "buffer", None)


def write_all(out: IO[bytes], data: bytes | memoryview) -> None:
    """Write every byte of ``data``: a short write is retried with the rest. A reader that
    left (EPIPE) is raised as is (typer ends quietly, status 1); any other failure (a full
    disk, an I/O error) is ``output-write-failed`` (exit 1) naming the OS's reason."""
    view = memoryview(data)
    try:
        while view:
            view = view[out.write(view) :]
        out.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise ExecutionError(
            f"the output could not be written ({exc.strerror or exc}): it is incomplete",
            reason=ReasonCode.OUTPUT_WRITE_FAILED,
        ) from exc


def emit_json(payload: Any, *, pretty: bool = True) -> None:
    """Print ``payload`` as JSON and a newline to stdout (bytes: no re-encoding), every
    byte or an error. An :class:`orjson.Fragment` in ``payload`` is written verbatim."""
    data = encode_json(payload, pretty=pretty, newline=True)
    out = binary_stdout()
    if out is None:  # a text-only stdout (a test's StringIO): typer decodes
        typer.echo(data, nl=False)
        return
    write_all(out, data)
