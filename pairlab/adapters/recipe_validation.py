"""Usage recipes checked against the server's real ``tools/list`` before a run.

``pairlab eval`` / ``demo`` (and a run the Prefect form starts) call
:func:`check_run_recipes` at plan time, after the intervention is installed and before
anything is pre-registered: a bad recipe is ``recipe-unknown-tool`` or
``recipe-invalid-arguments`` (exit 2) and no episode runs.

Why spawn the server once at plan time rather than read a recorded ``tools/list`` (the
certify report's): a user expects ``eval`` to refuse a bad recipe whether or not they
ran ``certify`` first, and against the server as it is installed now -- a recorded
listing can be missing, or stale after the manifest's pin or arm arguments changed. It
costs one server start per treated arm of the run (0.3 s for the reference, 3-20 s for
the shipped third-party servers on this loaded machine), and only when the manifest has
a recipe for a task the run plans; runs without one start nothing here. The server is
started locally (``adapters/mcp_tools_list``) on both backends: its tools do not depend
on where the episode runs.
"""

from __future__ import annotations

from collections.abc import Iterable

from pairlab.adapters.interventions import LoadedIntervention
from pairlab.adapters.mcp_tools_list import ToolsListing, tools_listing
from pairlab.core.recipe_check import require_valid_recipes


def check_run_recipes(
    loaded: LoadedIntervention, task_ids: Iterable[str], arms: Iterable[str]
) -> list[ToolsListing]:
    """Refuse the run when a recipe for one of ``task_ids`` does not fit the server's
    tools in one of ``arms`` (its treated arms the manifest supports); the listings asked
    (none when no planned task has a recipe)."""
    manifest = loaded.manifest
    wanted = set(task_ids)
    recipes = {task: r for task, r in manifest.recipes.items() if task in wanted}
    treated = [a for a in dict.fromkeys(arms) if a in manifest.supported_arms]
    if not recipes or not treated:
        return []
    listings = []
    for arm in treated:
        listing = tools_listing(loaded, arm)
        require_valid_recipes(manifest.id, recipes, listing.tools)
        listings.append(listing)
    return listings


__all__ = ["check_run_recipes"]
