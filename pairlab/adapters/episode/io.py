"""The episode-side glue the flow needs: inputs, usage, ledger, final answer, price
(the quota snapshots and the quota bracket: :mod:`pairlab.adapters.quota.account`).

Each function does one I/O step for an episode and returns plain values; the
Prefect tasks wrap them. Probes and readers fail soft: a missing measurement
becomes ``None``/unknown, never 0.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from pairlab.adapters.backends.base import CollectedFiles
from pairlab.adapters.intervention_install import install_for_backend
from pairlab.adapters.interventions import load_intervention
from pairlab.adapters.paths import catalog_dir
from pairlab.adapters.profiles import load_named_profile
from pairlab.core.accounting.ledger_rules import LEDGER_ROWS_FILE
from pairlab.core.prices import PriceCatalog
from pairlab.core.schemas.catalog import LoadedSuite, load_suite
from pairlab.core.schemas.intervention_manifest import DEFAULT_INTERVENTION
from pairlab.core.schemas.profile import RunnerProfile
from pairlab.core.schemas.usage import UsageVector

FINAL_ANSWER = re.compile(r"^FINAL ANSWER:\s?(.*)$", re.MULTILINE)


def load_eval_inputs(
    suite_id: str,
    profile_name: str,
    intervention: str = DEFAULT_INTERVENTION,
    backend_name: str | None = None,
) -> tuple[LoadedSuite, RunnerProfile]:
    """The suite and the profile with ``intervention`` (an id or a manifest's path) wired
    into its treated arms; with ``backend_name``, a pypi intervention is also installed
    for that backend (``adapters/intervention_install``), before any episode runs."""
    wired = load_intervention(intervention)
    profile = load_named_profile(profile_name, intervention=wired)
    if backend_name is not None:
        profile = install_for_backend(profile, wired, backend_name)
    return load_suite(catalog_dir(), suite_id), profile


def sim_account_dir(work_dir: Path, profile: RunnerProfile) -> Path | None:
    """The simulated subscription account shared by the episodes (sim quota probe only)."""
    if profile.quota.probe != "sim":
        return None
    path = (work_dir / "sim-account").resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


@dataclass
class EpisodeUsage:
    vector: UsageVector | None
    api_calls: int | None
    cli_version: str | None
    session_id: str | None
    primary_model: str | None
    provider_reported_cost_usd: float | None
    provenance: dict[str, int] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)

    def provenance_counts(self) -> dict[str, int] | None:
        return dict(self.provenance) or None


def usage_files(profile: RunnerProfile, collected: CollectedFiles) -> list[Path]:
    """Collected files matching the profile's usage globs (relative to the episode HOME).

    Taken from the collection's listing of regular files, so a symlink the agent
    planted under its HOME is never read."""
    return [
        collected.dest / f.path
        for f in collected.files
        if f.path.startswith("home/")
        and any(fnmatch.fnmatch(f.path.removeprefix("home/"), pat) for pat in profile.usage.paths)
    ]


def read_episode_usage(profile: RunnerProfile, collected: CollectedFiles) -> EpisodeUsage:
    from pairlab.adapters.usage import read_usage

    files = usage_files(profile, collected)
    if not files:
        return EpisodeUsage(None, None, None, None, None, None, {"no-usage-files": 1}, [])
    report = read_usage(profile.usage.reader, files)
    by_calls = sorted(report.by_model.items(), key=lambda kv: -(kv[1].api_calls or 0))
    return EpisodeUsage(
        vector=None if report.vector.is_empty() else report.vector,
        api_calls=report.api_calls,
        cli_version=report.cli_version,
        session_id=report.session_id,
        primary_model=by_calls[0][0] if by_calls else None,
        provider_reported_cost_usd=report.provider_reported_cost_usd,
        provenance=dict(report.provenance),
        files=[str(f) for f in files],
    )


def ingest_ledger(collected: CollectedFiles, episode_dir: Path) -> dict[str, int | None] | None:
    """Ingest the MCP measurement rows the client wrote into ``<episode>/ledger.db``
    (regular files of the collection's listing only: never through a symlink)."""
    rows = [p for p in collected.paths() if p.name == LEDGER_ROWS_FILE]
    if not rows:
        return None
    from pairlab.adapters.mcp_ledger.db import ingest_jsonl, ledger_totals

    db = episode_dir / "ledger.db"
    for path in rows:
        ingest_jsonl(path, db)
    return ledger_totals(db)


def extract_final_answer(stdout: str, client: str | None = None) -> str | None:
    """The agent's final answer: the real CLIs' own result (Claude's ``result`` object,
    Codex's last ``agent_message``), else the simulator's ``FINAL ANSWER:`` line."""
    from pairlab.adapters.clients.registry import REAL_CLIS

    if client in REAL_CLIS:
        return REAL_CLIS[client].final_answer(stdout)
    matches = FINAL_ANSWER.findall(stdout)
    return matches[-1].strip() if matches else None


def price_episode(
    profile: RunnerProfile,
    model: str | None,
    at: datetime | None,
    vector: UsageVector | None,
    api_calls: int | None,
) -> tuple[float | None, str]:
    """API list-price equivalent of an episode's usage (None = Not priced) and the catalog version."""
    from pairlab.core.prices import PROVIDER_BY_CLIENT, PricedUsage, price_usage

    catalog = _catalog()
    if model is None or at is None or vector is None:
        return None, catalog.version
    provider = PROVIDER_BY_CLIENT.get(profile.usage.reader)
    if provider is None:
        return None, catalog.version
    result = price_usage(catalog, provider, model, at, vector, requests=api_calls)
    usd = result.api_list_price_usd if isinstance(result, PricedUsage) else None
    return usd, catalog.version


@functools.cache
def _catalog() -> PriceCatalog:
    from pairlab.core.prices import load_catalog

    return load_catalog()
