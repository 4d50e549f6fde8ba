"""``pairlab report`` on a run pulled from S3-compatible storage reproduces the run's
report byte for byte (issue 16, item 5).

A real evidence eval (simulated client, real Prefect engine, a quota-aware schedule
so that quota-intervals.jsonl is among the inputs) publishes to a real S3 server
(moto, server mode). The report the run published is read back from the bucket;
then the real CLI re-renders it from the store URL — pulling and verifying every
object — and its stdout must equal those bytes, for JSON, HTML and markdown.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flows.evidence_eval import evidence_eval
from flows.params import EvidenceEvalParams
from pairlab.adapters.run.trial_inputs import open_sim_account
from tests.integration.store.conftest import S3Server, s3_client
from tests.support import pairlab_argv

pytestmark = [pytest.mark.s3, pytest.mark.prefect, pytest.mark.e2e]


def _object(endpoint: str, url: str, key: str) -> bytes:
    bucket, _, prefix = url.removeprefix("s3://").partition("/")
    body: Any = s3_client(endpoint).get_object(Bucket=bucket, Key=f"{prefix}/{key}")["Body"]
    data: bytes = body.read()
    return data


def _report(*args: str) -> bytes:
    import subprocess

    proc = subprocess.run(pairlab_argv("report", *args), capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode()
    assert b"Traceback" not in proc.stderr
    return proc.stdout


def test_report_from_a_pulled_s3_run_is_byte_for_byte_the_published_one(
    prefect_harness: None,
    s3_server: S3Server,
    s3_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    budgets = {"five-hour": 400_000, "seven-day": 4_000_000}
    monkeypatch.setenv(
        "PAIRLAB_SIM_EFFECTS",
        json.dumps(
            {
                "quota": {
                    "five_hour_budget_tokens": budgets["five-hour"],
                    "seven_day_budget_tokens": budgets["seven-day"],
                }
            }
        ),
    )
    work = tmp_path / "work"
    open_sim_account(work / "sim-account", budgets)
    run_id = "report-s3"
    params = EvidenceEvalParams(
        run_id=run_id,
        task_filter=["fix-median", "answer-cache-env"],
        arms=["baseline", "full"],
        repetitions=2,
        min_pairs=2,
        seed=3,
        backend="local",
        store=s3_url,
        work_dir=str(work),
        quota_interval_episodes=1,
        quota_interval_s=4.0,
    )
    state = evidence_eval(params, return_state=True)
    assert state.is_completed(), state
    staged = work / "runs" / run_id
    assert (staged / "quota-intervals.jsonl").read_text().count("\n") == 8

    published = {
        name: _object(s3_server.endpoint, s3_url, f"runs/{run_id}/{name}")
        for name in ("report.json", "report.html", "report.md")
    }
    for name, data in published.items():  # the original as the run wrote it
        assert data == (staged / name).read_bytes(), name
    assert json.loads(published["report.json"])["headline"]["groups"]

    source = f"{s3_url}/runs/{run_id}"
    pulled = tmp_path / "pulled"
    assert _report(source, "--json", "--to", str(pulled)) == published["report.json"]
    assert (pulled / "manifest.json").is_file()  # pulled and verified, then rendered
    assert _report(source, "--html", "--to", str(pulled)) == published["report.html"]
    assert _report(source, "--to", str(pulled)) == published["report.md"]
    # the pulled copy re-renders to its own files (what --check verifies)
    _report(str(pulled), "--check")
