"""A planted harmful finding through the real CLIs (issue 18): delivered by ``recall``,
rated harmful by the (scripted) model through the CLI's own MCP client, quarantined after
the second harmful rating, never delivered again -- and still in the append-only graph
and its audit trail. Three retrieval-arm episodes in a row; each starts from the graph
the previous one left (fresh workspace, HOME and state each time)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pairlab.adapters.backends.base import GraphSeed
from pairlab.adapters.backends.local import LocalBackend
from pairlab.adapters.emulator import ProviderEmulator
from pairlab.adapters.episode.finding_evidence import transcript_call_ids
from pairlab.core.findings.graph import audit_trail, fold
from pairlab.core.findings.lifecycle import certify_lifecycle
from pairlab.core.schemas.catalog import load_task
from tests.integration.realcli_harness import TRACE, Cli, run_cli_episode
from tests.support import CATALOG_DIR

pytestmark = [pytest.mark.realcli, pytest.mark.timeout(900)]
TASK = load_task(CATALOG_DIR / "tasks" / "recall-harmful-hint.yaml")


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProviderEmulator]:
    with ProviderEmulator(tmp_path_factory.mktemp("ledgers"), catalog_dir=CATALOG_DIR) as emu:
        yield emu


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> LocalBackend:
    return LocalBackend(
        base_dir=tmp_path_factory.mktemp("episodes"),
        host_env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
    )


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def _transcript(home: Path, cli: Cli) -> str:
    root = home / (".claude/projects" if cli == "claude" else ".codex/sessions")
    return "\n".join(p.read_text() for p in root.rglob("*.jsonl"))


@pytest.mark.parametrize("cli", ["claude", "codex"])
def test_a_harmful_finding_is_quarantined_after_two_ratings_and_never_delivered_again(
    emulator: ProviderEmulator, backend: LocalBackend, tmp_path: Path, cli: Cli
) -> None:
    carried: Path | None = None
    delivered: list[bool] = []
    finding_id = None
    for n in range(3):
        seed = GraphSeed(findings=list(TASK.seed_findings), holdout_share=0.0, carried=carried)
        episode = run_cli_episode(
            emulator, backend, cli, TASK, arm="retrieval", with_mcp=True, graph_seed=seed, seed=n
        )
        graph = Path(episode.prepared.mounts["graph"]) / "findings.jsonl"
        events = _jsonl(episode.state / "evidence-log.jsonl")
        text = _transcript(episode.home, cli)
        recall = next(e for e in events if e["event"] == "recall")
        finding_id = _jsonl(graph)[0]["findingId"]  # the planted finding
        shown = [f["findingId"] for e in events if e["event"] == "delivery" for f in e["findings"]]
        delivered.append(bool(shown))
        ratings = [e for e in events if e["event"] == "rating"]
        if shown:
            assert f"[{shown[0]}]" in text  # the model saw it
            # the model's own tool call rated it: its id is in the CLI's transcript
            assert [r["rating"] for r in ratings] == ["harmful"], episode.describe()
            assert ratings[0]["toolCallId"] and ratings[0]["toolCallId"] in text
        else:
            assert not ratings and recall["quarantinedSkipped"] == [finding_id]
            assert finding_id not in text.replace("quarantinedSkipped", "")
        carried = tmp_path / f"graph-{n}.jsonl"
        shutil.copyfile(graph, carried)
    assert delivered == [True, True, False]
    assert carried is not None
    state = fold(_jsonl(carried))
    (trail,) = audit_trail(state)  # still in the graph: quarantined, not deleted
    assert trail["findingId"] == finding_id and trail["quarantined"] is True
    assert trail["harmful"] == 2 and trail["events"] == [
        "finding",
        "rating",
        "rating",
        "quarantine",
    ]


@pytest.mark.parametrize("cli", ["claude", "codex"])
def test_lifecycle_events_each_client_exposes_to_the_intervention(
    emulator: ProviderEmulator, backend: LocalBackend, cli: Cli
) -> None:
    """Claim 1: session start, discovery, MCP calls with the client's own call and session
    ids are observed for both real CLIs; built-in tool use is not exposed to an MCP server.
    Labelled deterministic verification, never causal evidence."""
    task = load_task(CATALOG_DIR / "tasks" / "recall-legacy-caller.yaml")
    seed = GraphSeed(findings=list(task.seed_findings), holdout_share=0.0)
    episode = run_cli_episode(
        emulator, backend, cli, task, arm="retrieval", with_mcp=True, graph_seed=seed
    )
    transcripts = sorted(
        (episode.home / (".claude/projects" if cli == "claude" else ".codex/sessions")).rglob(
            "*.jsonl"
        )
    )
    report = certify_lifecycle(
        cli,
        _jsonl(episode.state / TRACE),
        _jsonl(episode.state / "evidence-log.jsonl"),
        transcript_call_ids(transcripts),
    )
    assert (report["kind"], report["causalEvidence"]) == ("deterministic-verification", False)
    statuses = {name: event["status"] for name, event in report["events"].items()}
    assert statuses == {
        "session-start": "observed",
        "tool-discovery": "observed",
        "mcp-tool-call": "observed",
        "client-call-id": "observed",
        "client-session-id": "observed",
        "tool-use": "not-exposed",
    }, report
    assert report["passed"] is True
    name = {"claude": "claude-code", "codex": "codex"}[cli]
    assert name in report["events"]["session-start"]["detail"], report["events"]
