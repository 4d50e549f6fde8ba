"""Compact JSON written while it is encoded: ``pairlab aggregate --json`` (issue 28).

At 10,000 cohorts the document is 225 MB; writing it to a new file costs ~0.7 s of CPU
in the kernel, during which one ``write`` of the whole text held up everything else.
:func:`emit_json_stream` writes the same bytes as :func:`pairlab.cli.output.emit_json`
(compact) of ``{**head, key: list(items)}``, the last key's array in blocks:

* the head is ``orjson.dumps({**head, key: []})`` without its final ``]}`` - compact
  orjson puts nothing between a key, its array and the object's end, so splicing the
  array's members there gives the one-shot text (``key`` must not be in ``head``);
* each block is ``orjson.dumps`` of up to ``block`` items as a list, its brackets
  dropped, after a comma when a block came before it; then ``]}`` and the newline;
* the blocks go to a writer thread through a queue of ``depth`` blocks (the memory in
  flight: ``depth`` + 2 blocks), so a block is encoded (and its items built, when
  ``items`` is lazy) while the one before is written - a file ``write`` releases the GIL.

Errors end the command as :func:`emit_json`'s do: the writer writes every byte
(:func:`write_all`) and its first error (EPIPE, ENOSPC) is raised in the caller's thread
once the writer has stopped, no block encoded after it; an item orjson refuses is
raised as orjson's error (the standard encoder, :func:`encode_json`'s fallback, could
not write this document's fragments either). Either way the status is not 0.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import IO, Any, Final

import typer

from pairlab.cli.output import binary_stdout, orjson_compact, write_all

BLOCK: Final = 256  # cohorts: ~6 MB of JSON at 25 pairs, 4 contrasts x 11 metrics
DEPTH: Final = 4
Chunk = bytes | memoryview


def compact_chunks(
    head: dict[str, Any], key: str, items: Iterable[Any], *, block: int = BLOCK
) -> Iterator[Chunk]:
    """The compact JSON of ``{**head, key: list(items)}`` and a newline, in pieces."""
    if key in head:
        raise ValueError(f"{key!r} is in the head: it must be the last key")
    if block < 1:
        raise ValueError(f"block must be at least 1, got {block}")
    opened = orjson_compact({**head, key: []})
    if not opened.endswith(b"[]}"):  # orjson's compact form: never
        raise AssertionError("orjson did not end the object with its empty array")
    yield memoryview(opened)[:-2]
    remaining = iter(items)
    first = True
    while members := list(islice(remaining, block)):
        if not first:
            yield b","
        first = False
        yield memoryview(orjson_compact(members))[1:-1]
    yield b"]}\n"


def write_in_background(chunks: Iterable[Chunk], out: IO[bytes], *, depth: int = DEPTH) -> None:
    """Write ``chunks`` to ``out`` (then flush it) from a writer thread, the next chunk
    taken from ``chunks`` while the last is written; the writer's error is raised here."""
    pending: queue.Queue[Chunk | None] = queue.Queue(maxsize=depth)
    failed: list[BaseException] = []

    def drain() -> None:
        while (chunk := pending.get()) is not None:
            if failed:  # taken and dropped: the producer is never left blocked on a put
                continue
            try:
                write_all(out, chunk)
            except BaseException as exc:  # re-raised in the caller's thread
                failed.append(exc)
        if not failed:
            try:
                write_all(out, b"")  # the flush, its error as write_all raises it
            except BaseException as exc:
                failed.append(exc)

    writer = threading.Thread(target=drain, name="json-writer", daemon=True)
    writer.start()
    try:
        for chunk in chunks:
            if failed:
                break
            pending.put(chunk)
    finally:
        pending.put(None)
        writer.join()
    if failed:
        raise failed[0]


def emit_json_stream(
    head: dict[str, Any], key: str, items: Iterable[Any], *, block: int = BLOCK
) -> None:
    """Print the compact JSON of ``{**head, key: list(items)}`` and a newline to stdout,
    encoding and writing block by block (the bytes of ``emit_json(..., pretty=False)``)."""
    chunks = compact_chunks(head, key, items, block=block)
    out = binary_stdout()
    if out is None:  # a text-only stdout: one write, as emit_json does
        typer.echo(b"".join(chunks), nl=False)
        return
    write_in_background(chunks, out)
