"""A reference solution as edits in each CLI's own vocabulary (pure text work).

* Claude's ``Edit``: one exact replacement per file -- the smallest line span covering
  every change, widened until ``old_string`` is unique in the file (Edit refuses an
  ambiguous match).
* Codex's ``apply_patch``: the freeform patch grammar the tool declares
  (``*** Begin Patch`` / ``*** Update File:`` / ``@@`` hunks of `` ``/``-``/``+`` lines /
  ``*** Add File:`` / ``*** End Patch``), hunks with 3 lines of context.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass


@dataclass(frozen=True)
class FileChange:
    path: str  # relative to the workspace, '/'-separated
    before: str | None  # the fixture's content; None for a new file
    after: str


def replacement(before: str, after: str) -> tuple[str, str]:
    """(old_string, new_string) for one exact, unique replacement turning before into after."""
    old_lines = before.splitlines(keepends=True)
    new_lines = after.splitlines(keepends=True)
    ops = [
        op
        for op in difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False).get_opcodes()
        if op[0] != "equal"
    ]
    if not ops:
        raise ValueError("before and after are identical: nothing to edit")
    i1, i2 = ops[0][1], ops[-1][2]
    j1, j2 = ops[0][3], ops[-1][4]
    while True:
        old = "".join(old_lines[i1:i2])
        if old and before.count(old) == 1:
            return old, "".join(new_lines[j1:j2])
        if i1 > 0:  # widen by one line of shared context on each side that has one
            i1, j1 = i1 - 1, j1 - 1
        if i2 < len(old_lines):
            i2, j2 = i2 + 1, j2 + 1
        if i1 == 0 and i2 == len(old_lines):
            return before, after


def _plain(line: str) -> str:
    return line[:-1] if line.endswith("\n") else line


def patch_section(change: FileChange) -> str:
    """One file's section of an apply_patch patch (no Begin/End lines)."""
    if change.before is None:
        lines = change.after.splitlines()
        return f"*** Add File: {change.path}\n" + "".join(f"+{line}\n" for line in lines)
    old_lines = change.before.splitlines(keepends=True)
    new_lines = change.after.splitlines(keepends=True)
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    out = [f"*** Update File: {change.path}\n"]
    for group in matcher.get_grouped_opcodes(3):
        out.append("@@\n")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.extend(f" {_plain(line)}\n" for line in old_lines[i1:i2])
                continue
            out.extend(f"-{_plain(line)}\n" for line in old_lines[i1:i2])
            out.extend(f"+{_plain(line)}\n" for line in new_lines[j1:j2])
        _last_tag, _, i2_last, _, j2_last = group[-1]
        at_end = i2_last == len(old_lines) and j2_last == len(new_lines)
        if at_end and (not change.after.endswith("\n") or not change.before.endswith("\n")):
            out.append("*** End of File\n")
    return "".join(out)


def apply_patch_text(changes: list[FileChange]) -> str:
    """A whole patch for Codex's apply_patch custom tool."""
    return "*** Begin Patch\n" + "".join(patch_section(c) for c in changes) + "*** End Patch\n"


__all__ = ["FileChange", "apply_patch_text", "patch_section", "replacement"]
