"""The evidence-eval flow end to end through the real Prefect engine.

A small 4-arm evaluation with the simulated client (2 tasks x 2 repetitions,
min-pairs 2 so the cohorts pass the gate) on the local backend with two pairs at
a time, and a smaller one on the Docker backend. Checks the records, the pairing
and planned order, the quota snapshots, the usage against what the simulator
drew, the report files in the store, and the Prefect artifacts (report markdown,
cohort table, progress at 100).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from flows.evidence_eval import evidence_eval
from flows.params import EvidenceEvalParams
from pairlab.core.report.prefect_ui import LINKED_FILES, cohort_tables, headline_markdown
from tests.e2e import eval_checks as checks
from tests.integration.backend_fixtures import simclient_image  # noqa: F401  (session fixture)

ARMS = ["baseline", "optimizer", "retrieval", "full"]


def _artifacts_of(flow_run_id: UUID) -> list[Any]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    with get_client(sync_client=True) as client:
        return list(
            client.read_artifacts(
                artifact_filter=ArtifactFilter(
                    flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id])
                )
            )
        )


def _artifact_by_key(key: str) -> Any:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
    from prefect.client.schemas.sorting import ArtifactSort

    with get_client(sync_client=True) as client:
        found = client.read_artifacts(
            artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])),
            sort=ArtifactSort.UPDATED_DESC,
            limit=1,
        )
    return found[0] if found else None


def _run(
    tmp_path: Path, run_id: str, **overrides: Any
) -> tuple[EvidenceEvalParams, dict[str, Any], UUID]:
    params = EvidenceEvalParams(
        run_id=run_id,
        arms=ARMS,  # type: ignore[arg-type]
        min_pairs=2,
        seed=3,
        store=str(tmp_path / "store"),
        work_dir=str(tmp_path / "work"),
        **overrides,
    )
    state = evidence_eval(params, return_state=True)
    assert state.is_completed(), state
    result = state.result()
    flow_run_id = state.state_details.flow_run_id
    assert flow_run_id is not None
    return params, result, flow_run_id


def _check_run(
    tmp_path: Path, params: EvidenceEvalParams, result: dict[str, Any], backend: str
) -> None:
    run_id = params.run_id
    assert run_id is not None
    work, store = Path(params.work_dir), Path(params.store)
    records = checks.check_records(
        work,
        run_id,
        tasks=params.task_filter,
        repetitions=params.repetitions,
        arms=ARMS,
        backend=backend,
    )
    assert result["run_id"] == run_id
    assert result["episodes"] == len(records)
    checks.check_pair_order(work, run_id, records)
    checks.check_quota(records)
    checks.check_usage_matches_truth(work, run_id, records)
    planned = [e["episode_id"] for e in checks.schedule_entries(work, run_id)]
    checks.check_store(store, run_id, planned)


@pytest.mark.prefect
@pytest.mark.e2e
def test_local_eval_four_arms_through_prefect(prefect_harness: None, tmp_path: Path) -> None:
    params, result, flow_run_id = _run(
        tmp_path,
        "e2e-local",
        task_filter=["fix-median", "answer-cache-env"],
        repetitions=2,
        concurrency=2,
        backend="local",
    )
    _check_run(tmp_path, params, result, "local")
    records = checks.load_records(Path(params.work_dir), "e2e-local")
    # Two pairs really ran at the same time, and still no pair's arms overlapped.
    assert checks.some_pairs_overlap(records)

    artifacts = _artifacts_of(flow_run_id)
    by_type: dict[str, list[Any]] = {}
    for art in artifacts:
        by_type.setdefault(art.type, []).append(art)
    (markdown,) = by_type["markdown"]
    assert markdown.key == "report-e2e-local"
    report = json.loads((tmp_path / "store/runs/e2e-local/report.json").read_text())
    locations = {
        name: str((tmp_path / "store/runs/e2e-local" / name).resolve()) for _, name in LINKED_FILES
    }
    headline = headline_markdown(report, locations)
    assert markdown.data == headline
    (table,) = by_type["table"]
    assert table.key == "cohorts-totaltokens-e2e-local"
    rows = json.loads(table.data) if isinstance(table.data, str) else table.data
    assert rows == cohort_tables(report)["totalTokens"]
    assert {row["task"] for row in rows} == {"fix-median", "answer-cache-env"}
    assert {row["contrast"] for row in rows} == {
        "optimizer vs baseline",
        "retrieval vs baseline",
        "full vs baseline",
    }
    (progress,) = by_type["progress"]
    assert progress.data == pytest.approx(100.0)
    assert progress.description.startswith("16/16 episodes (100%) of run e2e-local")

    # Read back by key, as a user would (Artifact.get leaks its sync client's socket).
    latest = _artifact_by_key("report-e2e-local")
    assert latest is not None and latest.data == headline


@pytest.mark.prefect
@pytest.mark.e2e
@pytest.mark.docker
def test_docker_eval_through_prefect(
    prefect_harness: None,
    simclient_image: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    params, result, flow_run_id = _run(
        tmp_path,
        "e2e-docker",
        task_filter=["fix-median"],
        repetitions=2,
        concurrency=1,
        backend="docker",
    )
    _check_run(tmp_path, params, result, "docker")
    kinds = {a.type for a in _artifacts_of(flow_run_id)}
    assert {"markdown", "table", "progress"} <= kinds
