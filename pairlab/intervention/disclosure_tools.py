"""``read_file`` and ``expand``: progressive disclosure with measured ledger rows.

``read_file`` returns a text file whole when it has at most the preview
threshold of cl100k tokens (no row: nothing was reduced). A larger file comes
back as a preview (pairlab.intervention.disclosure) and one reduction row is
written: before = the whole file, returned = the preview. ``expand`` returns the
previewed content, or a line range of it, and writes one expansion row linked by
the reference. If a preview would not be smaller than the file, the file is
returned whole: a preview is only ever a reduction.
"""

from __future__ import annotations

from typing import Final

from pairlab.intervention.disclosure import build_preview, content_ref, select_lines
from pairlab.intervention.ledger_rows import Payload, expansion_row, reduction_row
from pairlab.intervention.tools import Tool, ToolCall, ToolContext, ToolFailure
from pairlab.intervention.workspace import PathRefused, read_workspace_text

TREATED_ARMS: Final = frozenset({"optimizer", "retrieval", "full", "candidate"})
_REF_PATTERN: Final = "^sha256:[0-9a-f]{64}$"


def read_file(context: ToolContext, call: ToolCall) -> str:
    settings = context.settings
    try:
        found = read_workspace_text(
            settings.workspace_root, settings.workdir, call.arguments.get("path")
        )
    except PathRefused as exc:
        raise ToolFailure(str(exc)) from exc
    text = found.text
    total = context.count(text)
    if total <= settings.preview_threshold_tokens:
        return text
    ref = content_ref(text)
    preview = build_preview(
        found.label,
        text,
        ref,
        total_tokens=total,
        head_budget_tokens=settings.preview_head_tokens,
        count=context.count,
    )
    returned = Payload.measure(preview, context.count)
    if returned.tokens >= total:
        return text
    before = Payload.counted(text, total)
    context.store.put(ref, text)
    context.record(
        reduction_row(
            call.identity, call.name, before, returned, ref, context.counter.encoding_name
        )
    )
    return preview


def expand(context: ToolContext, call: ToolCall) -> str:
    ref = call.arguments.get("ref")
    if not isinstance(ref, str):
        raise ToolFailure("ref must be the expansion reference of a preview (sha256:<64 hex>)")
    text = context.store.get(ref.strip())
    if text is None:
        raise ToolFailure(
            f"unknown expansion reference {ref!r}: only previews returned by read_file in this "
            "session can be expanded; call read_file again"
        )
    try:
        returned_text = select_lines(
            text, call.arguments.get("start_line"), call.arguments.get("end_line")
        )
    except ValueError as exc:
        raise ToolFailure(str(exc)) from exc
    returned = Payload.measure(returned_text, context.count)
    context.record(
        expansion_row(
            call.identity, call.name, returned, ref.strip(), context.counter.encoding_name
        )
    )
    return returned_text


DISCLOSURE_TOOLS: Final = (
    Tool(
        name="read_file",
        title="Read a workspace file (previews large files)",
        description=(
            "Read a UTF-8 text file of the workspace. Small files come back whole. A large file "
            "comes back as a preview: its first lines, an outline of its definitions with line "
            "numbers, and a line 'expansion reference: sha256:...'; call expand with that "
            "reference for the full text or a line range."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "path of the file, relative to the working directory",
                }
            },
            "required": ["path"],
            "additionalProperties": False,
        },
        arms=TREATED_ARMS,
        handler=read_file,
    ),
    Tool(
        name="expand",
        title="Expand a preview",
        description=(
            "Return the full text previewed by read_file (its 'expansion reference'), or the "
            "lines start_line..end_line of it (1-based, inclusive)."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "ref": {
                    "type": "string",
                    "pattern": _REF_PATTERN,
                    "description": "the preview's expansion reference, sha256:<64 hex>",
                },
                "start_line": {"type": "integer", "minimum": 1},
                "end_line": {"type": "integer", "minimum": 1},
            },
            "required": ["ref"],
            "additionalProperties": False,
        },
        arms=TREATED_ARMS,
        handler=expand,
    ),
)
