"""A canary run's evidence on disk: ``trials/evidence/<episode>.json`` (core/canary/evidence.py).

Written before the run's episode record, so a resumed trial skips every run that has
it and never runs one twice; set aside (moved, never deleted) when a provider limit
ended its pair (flows/canary/provider_limits.py).
"""

from __future__ import annotations

from pairlab.adapters.run.directory import RunDir, safe_name
from pairlab.core.canary import RunEvidence

EVIDENCE_DIR = "trials/evidence"


def evidence_name(episode_id: str) -> str:
    return f"{EVIDENCE_DIR}/{safe_name(episode_id)}.json"


def load_evidence(run_dir: RunDir, episode_id: str) -> RunEvidence | None:
    path = run_dir.path / evidence_name(episode_id)
    if not path.is_file():
        return None
    return RunEvidence.model_validate_json(path.read_bytes())


__all__ = ["EVIDENCE_DIR", "evidence_name", "load_evidence"]
