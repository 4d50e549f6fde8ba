"""Issue 26 item 5: two real third-party MCP servers from PyPI, measured end to end.

``pairlab eval --intervention <id> --profile claude|codex --suite third-party`` (no
``--arms``: the baseline and the arms the server supports -- the optimizer arm) runs
offline, the real CLI against the provider emulator the run starts, and:

* every record carries the server's id, version and manifest hash; every treated episode
  ``loaded`` it (the emulator's ledger: its tools offered in the model requests);
* each treated record holds, per model request, the cl100k tokens the request carried of
  the server (``interventionDefinitionTokens``, measured by the emulator on every request
  with certify's rule); the first request carries exactly what ``pairlab certify``
  measured for that server and CLI (docs/interventions.md), the baseline none;
* the report's facts line names the server, its version and hash, and its answer
  (``interventionAnswer``, "The intervention's answer") says per contrast whether it saved
  tokens, list price and quota -- one repetition is below the gate, so the answer is
  ``insufficient`` and says so -- with the definition cost per request beside it.

CI time: four runs of 2 tasks x 2 arms x 1 repetition, the servers split so that each
runs with each real CLI and on each backend once.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pairlab.adapters.interventions import load_intervention
from pairlab.core.emulator.request_ledger import is_model_request, read_ledger
from pairlab.core.report.intervention_answer import ANSWER_WORDS
from pairlab.core.schemas.catalog import load_suite
from tests.e2e import eval_checks as checks
from tests.integration.realcli_harness import require_cli
from tests.support import CATALOG_DIR, cli_exit

pytestmark = [
    pytest.mark.prefect,
    pytest.mark.e2e,
    pytest.mark.realcli,
    pytest.mark.slow,
    pytest.mark.timeout(1800),
]

SUITE = "third-party"
TASKS = sorted(t.id for t in load_suite(CATALOG_DIR, SUITE).tasks)
# what `pairlab certify` measured per request before any tool search (docs/interventions.md,
# "Certifying an intervention"): Claude Code names each deferred tool, Codex the server
CERTIFIED = {
    ("mcp-server-git", "claude"): 137,
    ("mcp-server-git", "codex"): 5,
    ("code-review-graph", "claude"): 48,
    ("code-review-graph", "codex"): 38,
}


@pytest.mark.parametrize(
    ("intervention", "profile", "backend"),
    [
        ("code-review-graph", "claude", "local"),
        ("mcp-server-git", "codex", "local"),
        pytest.param("mcp-server-git", "claude", "docker", marks=pytest.mark.docker),
        pytest.param("code-review-graph", "codex", "docker", marks=pytest.mark.docker),
    ],
)
def test_a_third_party_server_is_measured_end_to_end(
    prefect_harness: None,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    intervention: str,
    profile: str,
    backend: str,
) -> None:
    require_cli(profile)  # type: ignore[arg-type]
    if backend == "docker":
        from tests.integration.backend_fixtures import docker_client_or_skip

        docker_client_or_skip().close()
    run_id = f"tp-{intervention}-{profile}-{backend}"
    work, store = tmp_path / "work", tmp_path / "store"
    argv = ["eval", "--intervention", intervention, "--profile", profile, "--suite", SUITE]
    argv += ["--backend", backend, "--repetitions", "1", "--seed", "3", "--run-id", run_id]
    argv += ["--emulator-wrong-probability", "0", "--work-dir", str(work), "--store", str(store)]
    capsys.readouterr()
    assert cli_exit([*argv, "--json"]) == 0, capsys.readouterr()
    identity = load_intervention(intervention).identity
    certified = CERTIFIED[(intervention, profile)]

    records = checks.load_records(work, run_id)
    assert len(records) == len(TASKS) * 2  # baseline and optimizer: no --arms needed
    assert {(r.task_id, r.arm) for r in records.values()} == {
        (t, a) for t in TASKS for a in ("baseline", "optimizer")
    }
    dirs = checks.episode_dirs(work, run_id)
    for eid, record in records.items():
        assert (record.intervention_id, record.intervention_version) == (
            identity.id,
            identity.version,
        )
        assert record.intervention_manifest_sha256 == identity.manifest_sha256
        assert record.backend == backend and record.correct is True, record.grader_checks
        model_rows = [
            r for r in read_ledger(dirs[eid] / "emulator-ledger.jsonl")[1] if is_model_request(r)
        ]
        if record.arm == "baseline":
            assert record.intervention_status is None
            assert record.intervention_definition_tokens is None
            assert all(not (r.mcp_definition_tokens or {}) for r in model_rows), eid
            continue
        assert record.intervention_status == "loaded", (eid, record.intervention_detail)
        tokens = record.intervention_definition_tokens
        assert tokens is not None and len(tokens) == len(model_rows), eid
        assert tokens[0] == certified, (eid, tokens)
        assert all(n >= certified for n in tokens), (eid, tokens)
        assert record.intervention_tools is not None  # its calls, from the transcript

    run = store / "runs" / run_id
    report = json.loads((run / "report.json").read_text())
    meta = report["meta"]
    assert meta["arms"] == ["baseline", "optimizer"]
    assert meta["intervention"] == {
        "id": identity.id,
        "version": identity.version,
        "manifest_sha256": identity.manifest_sha256,
    }
    health = meta["intervention_health"]
    assert health["treated"] == health["loaded"] == len(TASKS) and health["not_there"] == {}
    answer = report["interventionAnswer"]
    assert (answer["id"], answer["version"], answer["manifestSha256"]) == (
        identity.id,
        identity.version,
        identity.manifest_sha256,
    )
    (contrast,) = answer["contrasts"]
    assert (contrast["treatment"], contrast["control"], contrast["cohorts"]) == (
        "optimizer",
        "baseline",
        len(TASKS),
    )
    assert {contrast[q] for q in ("tokens", "cost", "subscription")} <= set(ANSWER_WORDS)
    # one repetition: every cohort is below the gate -- insufficient, and it says so
    assert answer["belowGate"] is True
    assert contrast["tokens"] == contrast["cost"] == "insufficient"
    definitions = answer["definitions"]["optimizer"]
    assert definitions["episodes"] == len(TASKS)
    assert definitions["definitionTokensPerRequest"]["min"] == certified
    assert (
        contrast["definitionTokensPerRequest"]
        == definitions["definitionTokensPerRequest"]["median"]
    )
    markdown = (run / "report.md").read_text()
    sha = identity.manifest_sha256[:12]
    assert f"intervention {identity.id} {identity.version} (manifest {sha})" in markdown
    assert f"Did **{identity.id} {identity.version}** (manifest {sha}) save?" in markdown
    assert "Definition cost (optimizer): " in markdown and f"; {certified}–" in markdown
    assert "Insufficient by design" in markdown and "not a model's behaviour" in markdown
    assert f"Did {identity.id} {identity.version}" in (run / "report.html").read_text()
