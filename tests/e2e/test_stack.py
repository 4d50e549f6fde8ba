"""The team stack for real (issue 20): infra/compose.yaml from local images only, with
`pairlab stack up|status|down`, an eval through its workers, Garage as the store, faults.

One stack for the module, under its own compose project, state directory, work dir and
host ports (never a stack a user runs): PostgreSQL, the Prefect server, a 3-node Garage
(replication factor 3), three worker containers with ``--limit 1`` (the eval's own flow
run holds one, so its pairs run on the two others). The images are built (or reused by
input hash) by ``stack up`` itself.

Shows: the stack comes up healthy from no container; an evidence-eval deployment
triggered through the server's API runs its pairs on two worker containers with the
episodes on the Docker backend through the host socket, no episode missing or twice,
the records equal to an in-process run of the same plan and seed; the run is published
to Garage and `pairlab pull` gets it back verified. The same deployment run from the
stack's Prefect UI in chromium (its form filled and submitted by clicking, as an operator
would): the flow run completes on the stack's workers and its report comes back from
Garage. Faults: one Garage node stopped while
publishing (writes still succeed, the manifest last), the whole store unreachable
(incomplete, never pulled; a retry completes it), a worker container killed mid-pair
(re-dispatched, every episode once), PostgreSQL restarted mid-run (the run finishes or
fails clearly; the same run id re-run completes without duplicates).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pairlab.adapters.images.registry import image_prefix
from pairlab.adapters.stack import read_env_file
from pairlab.adapters.store.garage import garage_binary
from tests.support import REPO_ROOT, read_execution_log, require, wait_for_garage_build

pytestmark = [
    pytest.mark.docker,
    pytest.mark.prefect,
    pytest.mark.e2e,
    pytest.mark.slow,
    pytest.mark.stack,
    pytest.mark.timeout(3600),
]

PAIRLAB = Path(sys.executable).parent / "pairlab"
TASKS = ["fix-median", "answer-cache-env"]
ARMS = ["baseline", "optimizer"]
LIMIT = "pairlab-episodes-stacktest"
TIMINGS: dict[str, float] = {}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Stack:
    root: Path
    work: Path
    env: dict[str, str]  # for pairlab stack / docker compose
    project: str

    @property
    def url(self) -> str:
        """The Prefect UI (tests/ui_support.py's helpers take the stack as their server)."""
        return f"http://127.0.0.1:{self.env['PAIRLAB_UI_PORT']}"

    @property
    def api(self) -> str:
        return f"{self.url}/api"

    api_url = api

    def s3_env(self) -> dict[str, str]:
        """The host's view of the stack's store (the s3.env that `stack up` writes)."""
        values = read_env_file(self.root / "state" / "s3.env")
        return {**os.environ, **{k: v for k, v in values.items() if k != "PAIRLAB_STORE"}}

    def container(self, service: str, index: int = 1) -> str:
        return f"{self.project}_{service}_{index}"

    def containers(self, service: str) -> list[str]:
        out = _docker(
            "ps",
            "-a",
            "--filter",
            f"label=com.docker.compose.project={self.project}",
            "--filter",
            f"label=com.docker.compose.service={service}",
            "--format",
            "{{.Names}}",
        )
        return sorted(out.split())


def _docker(*args: str, check: bool = True) -> str:
    proc = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=300)
    if check:
        assert proc.returncode == 0, f"docker {args}: {proc.stderr[-2000:]}"
    return proc.stdout


def _pairlab(
    args: list[str], env: dict[str, str], timeout: float = 1800
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(PAIRLAB), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=REPO_ROOT,
    )


def _compose_available() -> bool:
    if shutil.which("docker-compose"):
        return True
    return subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    docker_ok = shutil.which("docker") is not None and (
        subprocess.run(["docker", "version"], capture_output=True).returncode == 0
    )
    require(docker_ok, "Docker engine")
    require(_compose_available(), "docker compose (plugin) or docker-compose")
    wait_for_garage_build()
    require(
        garage_binary().is_file(), f"the Garage binary {garage_binary()} (scripts/build-garage.sh)"
    )
    root = tmp_path_factory.mktemp("stack")
    project = f"pairlabtest{os.getpid()}"
    env = {
        **os.environ,
        "PAIRLAB_STACK_PROJECT": project,
        "PAIRLAB_STACK_DIR": str(root / "state"),
        "PAIRLAB_WORK_DIR": str(root / "work"),
        "PAIRLAB_UI_PORT": str(_free_port()),
        "PAIRLAB_S3_PORT": str(_free_port()),
        "PAIRLAB_WORKER_LIMIT": "1",
        "PREFECT_FLOWS_HEARTBEAT_FREQUENCY": "30",
        "PAIRLAB_ZOMBIE_AFTER_S": "75",
    }
    started = time.monotonic()
    up = _pairlab(["stack", "up", "--workers", "3", "--json"], env)
    TIMINGS["stack_up_s"] = time.monotonic() - started
    stack = Stack(root, root / "work", env, project)
    try:
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-6000:]
        yield stack
    finally:
        if os.environ.get("PAIRLAB_KEEP_STACK") != "1":
            _pairlab(["stack", "down", "--volumes"], env, timeout=300)
        print(f"\nstack timings: {json.dumps({k: round(v, 1) for k, v in TIMINGS.items()})}")


def test_stack_up_is_healthy_with_three_garage_nodes(stack: Stack) -> None:
    status = _pairlab(["stack", "status", "--json"], stack.env)
    assert status.returncode == 0, status.stdout + status.stderr
    report = json.loads(status.stdout)
    by_service: dict[str, list[dict[str, Any]]] = {}
    for row in report["services"]:
        by_service.setdefault(row["service"], []).append(row)
    assert all(row["ready"] for row in report["services"]), report
    assert len(by_service["worker"]) == 3
    assert {"postgres", "prefect-server", "garage1", "garage2", "garage3"} <= set(by_service)
    assert by_service["garage-init"][0]["exit_code"] == 0
    assert report["endpoints"]["ui"].endswith(stack.env["PAIRLAB_UI_PORT"])
    # every image is local: no service runs an image from a registry
    for name in (
        stack.containers("garage1") + stack.containers("postgres") + stack.containers("worker")
    ):
        image = _docker("inspect", "--format", "{{.Config.Image}}", name).strip()
        assert image.startswith(image_prefix()), (name, image)  # PAIRLAB_IMAGE_PREFIX
    layout = _docker(
        "exec", stack.containers("garage1")[0], "garage", "-c", "/run/garage/garage.toml", "status"
    )
    assert layout.count("garage") >= 3 and "HEALTHY NODES" in layout, layout
    # the UI is served with the v1 UI setting (no external requests)
    import urllib.request

    with urllib.request.urlopen(stack.api.removesuffix("/api") + "/", timeout=10) as page:
        assert page.status == 200


def _eval_params(
    stack: Stack, run_id: str, *, work: Path, store: str, dispatch: bool
) -> dict[str, Any]:
    params: dict[str, Any] = {
        "task_filter": TASKS,
        "arms": ARMS,
        "repetitions": 1,
        "profile": "sim",
        "backend": "docker",
        "seed": 11,
        "concurrency": 2,
        "run_id": run_id,
        "work_dir": str(work),
        "store": store,
    }
    if dispatch:
        params["dispatch"] = {
            "mode": "work-pool",
            "deployment": "run-pair/run-pair",
            "episode_limit": LIMIT,
            "episode_limit_slots": 2,
            "lease_s": 60,
            "redispatch": 1,
            "poll_s": 1,
        }
    return params


TRIGGER = """
import json, sys, time
from prefect.client.orchestration import get_client
from prefect.deployments import run_deployment
from flows.form_schema import drop_none, with_form_defaults
from flows.params import EvidenceEvalParams
params, timeout, key = json.loads(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
# the deployment's form schema requires every field of `params` (a run replaces the whole
# parameter): an API client sends the complete model, no None values, tri-states as the
# form's words (unknown/no/yes)
with get_client(sync_client=True) as client:
    schema = client.read_deployment_by_name("evidence-eval/evidence-eval").parameter_openapi_schema
complete = drop_none(EvidenceEvalParams.model_validate(params).model_dump(mode="json"))
params = with_form_defaults(schema, {"params": complete})["params"]
run = run_deployment("evidence-eval/evidence-eval", parameters={"params": params}, timeout=0,
                     idempotency_key=key)
print("CREATED " + str(run.id), flush=True)
deadline, state = time.monotonic() + timeout, None
while time.monotonic() < deadline:
    try:
        with get_client(sync_client=True) as client:
            state = client.read_flow_run(run.id).state
    except Exception as exc:  # the server or its database restarting: ask again
        print("POLL-ERROR " + repr(exc)[:300], flush=True)
    else:
        if state is not None and state.is_final():
            break
    time.sleep(2)
print("RESULT " + json.dumps({"id": str(run.id), "state": state.type.value if state else None,
                              "message": state.message if state else None}))
"""
"""The harness's client: creates the eval's flow run (an idempotency key, so a retried
request never makes a second one) and polls it to a final state. A poll that fails while a
service restarts is asked again: the test asserts what the platform did, not that this
process saw no 500. Prefect's own client retries 500/504 too (as the stack's workers do)."""


def _trigger_env(stack: Stack) -> dict[str, str]:
    return {
        **os.environ,
        "PREFECT_API_URL": stack.api,
        "PREFECT_LOGGING_LEVEL": "WARNING",
        "PREFECT_CLIENT_MAX_RETRIES": "7",
        "PREFECT_CLIENT_RETRY_EXTRA_CODES": "500,504",
    }


def _trigger_argv(params: dict[str, Any], timeout_s: float) -> list[str]:
    key = f"{params['run_id']}-{uuid.uuid4()}"  # one per trigger: a re-run is a new flow run
    return [sys.executable, "-c", TRIGGER, json.dumps(params), str(timeout_s), key]


def _result_line(text: str) -> dict[str, Any]:
    line = next((ln for ln in reversed(text.splitlines()) if ln.startswith("RESULT ")), None)
    assert line is not None, text[-4000:]
    result: dict[str, Any] = json.loads(line[len("RESULT ") :])
    return result


def _trigger(stack: Stack, params: dict[str, Any], timeout_s: float = 1500) -> dict[str, Any]:
    """An evidence-eval flow run created through the server's API, waited for."""
    proc = subprocess.run(
        _trigger_argv(params, timeout_s),
        env=_trigger_env(stack),
        capture_output=True,
        text=True,
        timeout=timeout_s + 120,
        cwd=REPO_ROOT,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    return _result_line(proc.stdout)


def _records(episodes: Path) -> dict[str, dict[str, Any]]:
    return {
        (rec := json.loads(p.read_text()))["episodeId"]: rec
        for p in sorted(episodes.glob("*/record.json"))
    }


def _outcome(rec: dict[str, Any]) -> tuple[Any, ...]:
    checks = sorted((c["name"], c["passed"]) for c in rec["graderChecks"])
    usage = ("uncachedInputTokens", "cachedInputTokens", "outputTokens", "totalTokens", "apiCalls")
    return (*(rec[f] for f in usage), rec["success"], rec["correct"], rec["exitCode"], checks)


def _in_process(stack: Stack, run_id: str) -> dict[str, dict[str, Any]]:
    work = stack.root / "reference"
    params = _eval_params(stack, run_id, work=work, store=str(work / "store"), dispatch=False)
    code = (
        "import json, sys\nfrom flows.params import EvidenceEvalParams\n"
        "from flows.evidence_eval import evidence_eval\n"
        "r = evidence_eval(EvidenceEvalParams(**json.loads(sys.argv[1])))\n"
        "print('RESULT ' + json.dumps({'episodes': r['episodes']}))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    proc = subprocess.run(
        [sys.executable, "-c", code, json.dumps(params)],
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
        cwd=REPO_ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return _records(work / "runs" / run_id / "episodes")


def test_eval_through_two_workers_equals_in_process_and_pulls_back_from_garage(
    stack: Stack, tmp_path: Path
) -> None:
    run_id = "stack-eval"
    started = time.monotonic()
    result = _trigger(
        stack,
        _eval_params(stack, run_id, work=stack.work, store="s3://pairlab/runs", dispatch=True),
    )
    TIMINGS["eval_8_episodes_s"] = time.monotonic() - started
    assert result["state"] == "COMPLETED", result
    episodes = stack.work / "runs" / run_id / "episodes"
    records = _records(episodes)
    assert len(records) == len(TASKS) * len(ARMS)  # none missing
    pair_workers: dict[str, set[str]] = {}
    for episode_id, rec in records.items():
        log = read_execution_log(episodes / episode_id)
        assert [e["event"] for e in log] == ["start", "end"], log  # ran once
        assert log[0]["limit"] == LIMIT
        pair_workers.setdefault(rec["pairId"], set()).add(log[0]["worker"])
    assert all(len(ws) == 1 for ws in pair_workers.values()), pair_workers  # a pair, one worker
    all_workers = set().union(*pair_workers.values())
    assert len(all_workers) == 2, pair_workers  # two worker containers ran the pairs
    reference = _in_process(stack, run_id)
    assert set(reference) == set(records)
    for episode_id, rec in records.items():
        assert _outcome(rec) == _outcome(reference[episode_id]), episode_id

    dest = tmp_path / "pulled"
    pulled = _pairlab(
        ["pull", f"s3://pairlab/runs/runs/{run_id}", "--to", str(dest), "--json"], stack.s3_env()
    )
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    out = json.loads(pulled.stdout)
    assert out["downloaded"] == out["objects"] > 0
    staged = stack.work / "runs" / run_id
    assert (dest / "report.json").read_bytes() == (staged / "report.json").read_bytes()


UI_RUN_ID = "stack-ui"
UI_RUN_DONE_S = 900


@pytest.mark.browser
def test_eval_from_the_stack_ui_runs_on_its_workers_and_lands_in_garage(
    stack: Stack, tmp_path: Path
) -> None:
    """The operator's path on the team stack: the evidence-eval deployment's Custom run form
    in the stack's Prefect UI (the form `pairlab forms` gave the deployment of
    infra/prefect.yaml), one task x 1 repetition x its 4 default arms (one pair, sim
    profile), the stack's work dir and Garage as the store, submitted by clicking. The run
    completes on the stack's workers (the eval on the pool, its pair on a worker container)
    and its report is pulled back from Garage, equal to the staged one."""
    from playwright.sync_api import expect, sync_playwright

    from tests.support import CHROMIUM
    from tests.ui_support import (
        api,
        form_field,
        launch_chromium,
        new_ui_page,
        runs_of,
        screenshot,
        wait_for_created_run,
        wait_for_run,
    )

    require(CHROMIUM.exists(), "Debian chromium at /usr/bin/chromium")
    store = "s3://pairlab/runs"
    deployment = api(stack, "GET", "/deployments/name/evidence-eval/evidence-eval")
    known = {r["id"] for r in runs_of(stack, deployment["id"])}
    started = time.monotonic()
    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            page = new_ui_page(browser)
            # deployment page -> Run -> Custom run, each step waiting for what it needs
            page.goto(f"{stack.url}/deployments/deployment/{deployment['id']}", wait_until="commit")
            run_button = page.get_by_role("button", name="Run", exact=True)
            expect(run_button).to_be_visible()
            run_button.click()
            page.get_by_text("Custom run").click()
            suite = form_field(page, "Suite").locator("button.p-select-button__control").first
            expect(suite).to_have_text("core")  # the polished form, hydrated with the defaults
            tasks = form_field(page, "Task Filter")
            tasks.locator(".p-tag").filter(has_text="answer-cache-env").locator(
                ".p-tag__dismiss"
            ).click()
            expect(tasks.locator(".p-tag")).to_have_count(1)
            values = {
                "Repetitions": "1",
                "Run Id": UI_RUN_ID,
                "Work Dir": str(stack.work),  # the stack's work dir (not the default /srv/...)
                "Store": store,
            }
            for label, value in values.items():
                form_field(page, label).locator("textarea, input").first.fill(value)
            for label, value in values.items():  # held before it is sent (re-renders)
                expect(form_field(page, label).locator("textarea, input").first).to_have_value(
                    value
                )
            submit = page.get_by_role("button", name="Submit")
            expect(submit).to_be_enabled()
            submit.click()
            try:
                flow_run_id = wait_for_created_run(stack, deployment["id"], 300, known)
            except AssertionError:
                screenshot(page, tmp_path, "stack-ui-submit-no-run", tall=True)
                raise AssertionError(page.locator("body").inner_text()[-3000:]) from None
            run = wait_for_run(stack, flow_run_id, ("COMPLETED",), UI_RUN_DONE_S)
            TIMINGS["ui_eval_1_pair_s"] = time.monotonic() - started
            # the run's page says where the report went: Garage, not a worker's disk
            page.goto(f"{stack.url}/flow-runs/flow-run/{flow_run_id}", wait_until="commit")
            expect(page.get_by_text("Completed").first).to_be_visible()
            expect(page.locator("body")).to_contain_text(
                f"report {store}/runs/{UI_RUN_ID}/report.html"
            )
            screenshot(page, tmp_path, "stack-ui-run-logs", tall=True)
        finally:
            expect.set_options(timeout=None)
            browser.close()

    # the form's values reached the flow, which ran on the stack's pool
    assert run["name"] == UI_RUN_ID and run["work_pool_name"] == "pairlab", run
    sent = run["parameters"]["params"]
    assert sent["task_filter"] == ["fix-median"] and sent["repetitions"] == 1, sent
    assert sent["store"] == store and sent["work_dir"] == str(stack.work), sent
    # the form's untouched Arms (empty) is the reference intervention's four arms, resolved
    # and frozen by the flow; its one pair (4 arms) ran once, on a worker container
    assert sent["arms"] == [], sent
    arms = ["baseline", "optimizer", "retrieval", "full"]
    frozen = json.loads((stack.work / "runs" / UI_RUN_ID / "settings.json").read_text())
    assert frozen["arms"] == arms, frozen
    episodes = stack.work / "runs" / UI_RUN_ID / "episodes"
    records = _records(episodes)
    assert sorted(records) == sorted(f"{UI_RUN_ID}:fix-median:0:{a}" for a in arms), records
    workers = {
        _docker("inspect", "--format", "{{.Config.Hostname}}", name).strip()
        for name in stack.containers("worker")
    }
    for episode_id in records:
        log = read_execution_log(episodes / episode_id)
        assert [e["event"] for e in log] == ["start", "end"], log
        assert log[0]["worker"] in workers, (log[0], workers)
    # the report and artifacts are in Garage: pulled back (verified) equal to the staged run
    dest = tmp_path / "pulled"
    pulled = _pairlab(
        ["pull", f"{store}/runs/{UI_RUN_ID}", "--to", str(dest), "--json"], stack.s3_env()
    )
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    out = json.loads(pulled.stdout)
    assert out["downloaded"] == out["objects"] > 0
    staged = stack.work / "runs" / UI_RUN_ID
    for name in ("report.json", "episodes.jsonl"):
        assert (dest / name).read_bytes() == (staged / name).read_bytes(), name
    assert (dest / "report.html").is_file() and (dest / "manifest.json").is_file()


# --- faults ------------------------------------------------------------------------------


class HookedStore:
    """The S3 store with every write recorded, and ``hook`` called before the Nth one."""

    def __init__(self, inner: Any, at: int, hook: Any) -> None:
        self.inner, self.at, self.hook = inner, at, hook
        self.written: list[str] = []

    def _before(self, key: str) -> None:
        if len(self.written) == self.at:
            self.hook()
        self.written.append(key)

    def put_file(self, key: str, path: Path, *, sha256: str) -> None:
        self._before(key)
        self.inner.put_file(key, path, sha256=sha256)

    def put_bytes(self, key: str, data: bytes) -> None:
        self._before(key)
        self.inner.put_bytes(key, data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _use_stack_s3(stack: Stack, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in stack.s3_env().items():
        if name.startswith("AWS_") or name.startswith("PAIRLAB_S3"):
            monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)


def _wait_ready(stack: Stack, services: set[str], timeout_s: float = 300) -> None:
    """Every container of ``services`` ready again (after a fault test restarted one)."""
    deadline = time.monotonic() + timeout_s
    rows: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        status = _pairlab(["stack", "status", "--json"], stack.env, timeout=60)
        try:
            rows = [r for r in json.loads(status.stdout)["services"] if r["service"] in services]
        except (json.JSONDecodeError, KeyError):
            rows = []
        if {r["service"] for r in rows} == services and all(r["ready"] for r in rows):
            return
        time.sleep(2)
    raise AssertionError(f"{sorted(services)} not ready again: {rows}")


GARAGE = {"garage1", "garage2", "garage3"}


def _wait_garage_healthy(stack: Stack, timeout_s: float = 300) -> None:
    _wait_ready(stack, GARAGE, timeout_s)


def test_one_garage_node_stopped_while_publishing(
    stack: Stack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pairlab.adapters.store import open_store
    from pairlab.adapters.store.publish import publish_run
    from pairlab.adapters.store.runs import list_runs, pull_run
    from tests.integration.store.run_dirs import write_eval_run

    _use_stack_s3(stack, monkeypatch)
    node = stack.containers("garage3")[0]  # not the endpoint node: the cluster serves on
    run_dir = write_eval_run(tmp_path / "local", "fault-node")
    store = HookedStore(open_store("s3://pairlab/faults-node"), 2, lambda: _docker("stop", node))
    try:
        manifest = publish_run(run_dir, store)  # type: ignore[arg-type]
    finally:
        _docker("start", node)
    assert store.written[-1] == "runs/fault-node/manifest.json"  # the manifest last
    assert len(store.written) == len(manifest.objects) + 1
    [row] = list_runs(open_store("s3://pairlab/faults-node"))
    assert row.status == "complete"
    pull_run(open_store("s3://pairlab/faults-node"), "fault-node", tmp_path / "pulled")
    _wait_garage_healthy(stack)


def test_store_unreachable_while_publishing_then_retry_completes(
    stack: Stack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pairlab.adapters.store import open_store
    from pairlab.adapters.store.publish import publish_run
    from pairlab.adapters.store.runs import list_runs, pull_run
    from pairlab.core.errors import EnvironmentUnavailable, PublishError, ReasonCode
    from tests.integration.store.conftest import FAST_S3_OPTIONS
    from tests.integration.store.run_dirs import write_eval_run

    _use_stack_s3(stack, monkeypatch)
    nodes = [stack.containers(f"garage{i}")[0] for i in (1, 2, 3)]
    url = "s3://pairlab/faults-down"
    run_dir = write_eval_run(tmp_path / "local", "fault-down")
    store = HookedStore(
        open_store(url, **FAST_S3_OPTIONS), 3, lambda: _docker("stop", "-t", "2", *nodes)
    )
    try:
        with pytest.raises(EnvironmentUnavailable) as caught:
            publish_run(run_dir, store)  # type: ignore[arg-type]
        assert caught.value.reason == ReasonCode.S3_UNAVAILABLE
    finally:
        _docker("start", *nodes)
    _wait_garage_healthy(stack)
    [row] = list_runs(open_store(url))
    assert row.status == "incomplete"  # three objects, no manifest
    with pytest.raises(PublishError) as refused:
        pull_run(open_store(url), "fault-down", tmp_path / "never")
    assert refused.value.reason == ReasonCode.RUN_INCOMPLETE
    retry = _pairlab(["publish", str(run_dir), "--to", url, "--json"], stack.s3_env())
    assert retry.returncode == 0, retry.stderr[-3000:]
    out = json.loads(retry.stdout)
    assert out["status"] == "complete" and out["skipped"] >= 3  # resumed, nothing twice
    pull_run(open_store(url), "fault-down", tmp_path / "pulled")


def _start_trigger(stack: Stack, params: dict[str, Any], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            _trigger_argv(params, 1500),
            env=_trigger_env(stack),
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=REPO_ROOT,
        )


def _result_of(proc: subprocess.Popen[bytes], log: Path) -> dict[str, Any]:
    proc.wait(timeout=1700)
    text = log.read_text(errors="replace")
    assert proc.returncode == 0, text[-4000:]
    return _result_line(text)


def _wait_started_episode(
    episodes: Path, trigger: subprocess.Popen[bytes], log: Path, timeout_s: float = 1500
) -> dict[str, Any]:
    """The first episode seen running. Waited for as long as the eval's flow run is
    (its trigger polls it to a final state): under load a flow run can take many minutes
    to start, and the fault is meant to land mid-pair, whenever that is."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for path in sorted(episodes.glob("*/execution.jsonl")):
            events = read_execution_log(path.parent)
            if events and events[-1]["event"] == "start":
                return events[-1]
        if trigger.poll() is not None:
            raise AssertionError(
                f"the run ended before an episode started: {_result_of(trigger, log)}"
            )
        time.sleep(0.5)
    raise AssertionError("no episode started")


def _assert_each_episode_once(episodes: Path, expected: int) -> None:
    records = _records(episodes)
    assert len(records) == expected, sorted(records)
    for episode_id in records:
        events = [e["event"] for e in read_execution_log(episodes / episode_id)]
        assert events.count("end") == 1, (episode_id, events)


def test_worker_killed_mid_pair_is_redispatched_and_completes_once(
    stack: Stack, tmp_path: Path
) -> None:
    run_id = "stack-kill"
    params = _eval_params(
        stack, run_id, work=stack.work, store=str(stack.work / "store"), dispatch=True
    )
    proc = _start_trigger(stack, params, tmp_path / "trigger.log")
    episodes = stack.work / "runs" / run_id / "episodes"
    victim = _wait_started_episode(episodes, proc, tmp_path / "trigger.log")
    started = time.monotonic()
    _docker("kill", victim["worker"])  # the worker name is its container's host name (id)
    result = _result_of(proc, tmp_path / "trigger.log")
    TIMINGS["kill_recovery_s"] = time.monotonic() - started
    assert result["state"] == "COMPLETED", result
    _assert_each_episode_once(episodes, len(TASKS) * len(ARMS))
    _docker("start", victim["worker"], check=False)  # back to three workers
    _wait_ready(stack, {"worker"})


def test_postgres_restarted_mid_run_then_same_run_id_completes_without_duplicates(
    stack: Stack, tmp_path: Path
) -> None:
    """PostgreSQL restarted while a pair runs. The clients (workers, flow runs, this
    harness) ride out the 500s; whatever state the first run ends in, it ends (never
    hangs), and the same run id then completes with every episode exactly once."""
    run_id = "stack-pg"
    params = _eval_params(
        stack, run_id, work=stack.work, store=str(stack.work / "store"), dispatch=True
    )
    proc = _start_trigger(stack, params, tmp_path / "first.log")
    episodes = stack.work / "runs" / run_id / "episodes"
    _wait_started_episode(episodes, proc, tmp_path / "first.log")
    started = time.monotonic()
    _docker("restart", "-t", "5", stack.containers("postgres")[0])
    first = _result_of(proc, tmp_path / "first.log")
    TIMINGS["postgres_restart_first_run_s"] = time.monotonic() - started
    TIMINGS["postgres_restart_first_completed"] = 1.0 if first["state"] == "COMPLETED" else 0.0
    # the run finishes, or fails clearly (a final state, never a hang)
    assert first["state"] in {"COMPLETED", "FAILED", "CRASHED"}, first
    _wait_ready(stack, {"postgres", "prefect-server", "worker"})
    if first["state"] != "COMPLETED":
        second = _trigger(stack, params)
        assert second["state"] == "COMPLETED", second
    _assert_each_episode_once(episodes, len(TASKS) * len(ARMS))
    report = json.loads((stack.work / "runs" / run_id / "report.json").read_text())
    assert report  # the run's report, written once every episode is in
