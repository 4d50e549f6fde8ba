"""Running `pairlab serve` against a test Prefect server and looking at it in chromium.

Shared by the browser tests of the run form, the run page and the canary approval,
and by the shutdown test. Screenshots go to the test's tmp dir and, when
``PAIRLAB_UI_SCREENSHOTS`` names a directory, there too (docs/screenshots/ is
refreshed that way).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Collection, Iterator
from pathlib import Path
from typing import Any

from tests.prefect_server import PrefectServer, stop_process_group

SERVE_READY_S = 300
API_RETRIES = 5  # answers 503 retried, 1 s to 16 s apart
SCREENSHOTS_ENV = "PAIRLAB_UI_SCREENSHOTS"
TERMINAL = ("COMPLETED", "FAILED", "CRASHED", "CANCELLED")


def api(server: PrefectServer, method: str, path: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        server.api_url + path,
        method=method,
        data=data,
        headers={"Content-Type": "application/json"},
    )
    for attempt in range(API_RETRIES + 1):
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as exc:
            # 503: the server's SQLite was locked under load and nothing was written;
            # Prefect's own client retries it the same way
            if exc.code != 503 or attempt == API_RETRIES:
                raise
            time.sleep(2**attempt)
    raise AssertionError("unreachable")


def start_serve(
    server: PrefectServer, cwd: Path, log_name: str = "serve.log"
) -> subprocess.Popen[bytes]:
    """`pairlab serve` in ``cwd`` (its own process group), output to ``cwd/log_name``."""
    cwd.mkdir(parents=True, exist_ok=True)
    with (cwd / log_name).open("ab") as log:
        return subprocess.Popen(
            [str(Path(sys.executable).parent / "pairlab"), "serve"],
            cwd=cwd,
            env=server.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


@contextlib.contextmanager
def serving(server: PrefectServer, cwd: Path) -> Iterator[subprocess.Popen[bytes]]:
    proc = start_serve(server, cwd)
    try:
        yield proc
    finally:
        stop_process_group(proc, timeout=30)


def _flow_processes(serve_pid: int) -> list[int]:
    """Flow-run processes (``python -m prefect.engine``) that ``pairlab serve`` started."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes()
            if ppid == serve_pid and b"prefect.engine" in cmdline:
                found.append(int(entry.name))
    return found


def wait_for_flow_processes(proc: subprocess.Popen[bytes], timeout_s: float = 120) -> None:
    """Wait until the flow runs ``proc`` (``pairlab serve``) started have exited: a run's
    state turns terminal before its process has flushed and ended, and stopping serve in
    between makes Prefect log a crash that belongs to the stop, not to the run."""
    deadline = time.monotonic() + timeout_s
    while _flow_processes(proc.pid):
        assert time.monotonic() < deadline, "a flow-run process of pairlab serve never ended"
        time.sleep(0.5)


def wait_for_deployment(
    server: PrefectServer, proc: subprocess.Popen[bytes], log: Path, name: str
) -> dict[str, Any]:
    deadline = time.monotonic() + SERVE_READY_S
    while True:
        assert proc.poll() is None, f"pairlab serve exited:\n{log.read_text()[-3000:]}"
        found = [d for d in api(server, "POST", "/deployments/filter", {}) if d["name"] == name]
        if found:
            return dict(found[0])
        assert time.monotonic() < deadline, f"{name} deployment never appeared"
        time.sleep(1)


def runs_of(server: PrefectServer, deployment_id: str) -> list[dict[str, Any]]:
    body = {"flow_runs": {"deployment_id": {"any_": [deployment_id]}}}
    return list(api(server, "POST", "/flow_runs/filter", body))


def wait_for_created_run(
    server: PrefectServer, deployment_id: str, timeout_s: float, known: Collection[str] = ()
) -> str:
    """The id of the one flow run the UI created for ``deployment_id``, once the server has it
    (``known``: runs the deployment had before the form was sent, e.g. another test's on
    the session's server).

    What a browser test waits on after submitting a form: the run appearing through the
    API, not the page's navigation (which under load can take longer than the run's
    creation and proves nothing about it)."""
    created = _created_run(server, deployment_id, timeout_s, known)
    assert created is not None
    return created


def _created_run(
    server: PrefectServer,
    deployment_id: str,
    timeout_s: float,
    known: Collection[str],
    give_up: Callable[[], bool] | None = None,
) -> str | None:
    """:func:`wait_for_created_run`, or None as soon as ``give_up()`` says so."""
    deadline = time.monotonic() + timeout_s
    while True:
        runs = [r for r in runs_of(server, deployment_id) if r["id"] not in set(known)]
        if runs:
            assert len(runs) == 1, runs
            return str(runs[0]["id"])
        if give_up is not None and give_up():
            return None
        assert time.monotonic() < deadline, f"the UI created no flow run in {timeout_s:.0f} s"
        time.sleep(0.5)


def submit_and_wait_for_run(
    page: Any,
    server: PrefectServer,
    deployment_id: str,
    timeout_s: float,
    known: Collection[str] = (),
    *,
    tries: int = 3,
) -> str:
    """Click the form's Submit and return the flow run it created (:func:`wait_for_created_run`).

    Under CI load the page once showed "Oops. Something went wrong." after Submit and no
    run was created (cold CI run 8: both browser tests, on one server, at the same moment;
    passing in ~30 s alone). The likely cause, not confirmed from that server's log: its
    SQLite locked, which Prefect answers 503 with nothing written. An operator closes that
    notice and submits again; so does this, at most ``tries`` times in all, and only while
    no run exists: a run the server did create is never duplicated."""
    oops = page.get_by_text("Something went wrong").first
    for attempt in range(tries):
        page.get_by_role("button", name="Submit").click()
        last = attempt == tries - 1
        created = _created_run(
            server, deployment_id, timeout_s, known, None if last else oops.is_visible
        )
        if created is not None:
            return created
        _dismiss_notices(page, oops)
        time.sleep(2**attempt)
    raise AssertionError("unreachable: the last try waits until a run or its timeout")


def _dismiss_notices(page: Any, oops: Any) -> None:
    """Close the UI's notices (toasts) and wait until the error notice is gone, as an
    operator would before submitting again. Toasts stack and animate: a Close button may
    sit under the next toast's countdown circle (a plain click then waited its whole
    timeout in cold CI run 10), so each click is forced and short, and a notice that will
    not close is left to its own countdown (the wait for it to hide)."""
    from playwright.sync_api import Error as PlaywrightError

    for close in page.get_by_role("button", name="Close").all():
        with contextlib.suppress(PlaywrightError):
            if close.is_visible():
                close.click(force=True, timeout=5_000)
    with contextlib.suppress(PlaywrightError):
        oops.wait_for(state="hidden", timeout=30_000)


def wait_for_run(
    server: PrefectServer, flow_run_id: str, until: tuple[str, ...], timeout_s: float
) -> dict[str, Any]:
    """The flow run once its state type is one of ``until`` (fails on another end)."""
    deadline = time.monotonic() + timeout_s
    while True:
        run = dict(api(server, "GET", f"/flow_runs/{flow_run_id}"))
        kind = run["state"]["type"]
        if kind in until:
            return run
        assert kind not in TERMINAL, run["state"]
        assert time.monotonic() < deadline, f"run still {kind} ({run['state_name']})"
        time.sleep(1)


def screenshot(page: Any, tmp: Path, name: str, *, tall: bool = False) -> Path:
    """A screenshot of the page (``tall``: the whole scrolling pane, by a tall viewport)."""
    size = page.viewport_size
    if tall:
        height = page.evaluate(
            "Math.max(...Array.from(document.querySelectorAll('*')).map(e => e.scrollHeight))"
        )
        page.set_viewport_size({"width": size["width"], "height": min(int(height) + 40, 6000)})
        page.wait_for_timeout(500)
    path = tmp / f"{name}.png"
    page.screenshot(path=str(path))
    if tall:
        page.set_viewport_size(size)
    keep = os.environ.get(SCREENSHOTS_ENV)
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, Path(keep) / path.name)
    return path


def form_field(page: Any, label: str) -> Any:
    """The run form's property whose label starts with ``label`` (the innermost enclosing
    property: a nested section's field, not the section)."""
    return page.locator(
        f"xpath=//span[contains(@class,'schema-form-property__label') and starts-with(normalize-space(.), '{label}')]"
        "/ancestor::div[contains(concat(' ', normalize-space(@class), ' '), ' schema-form-property ')][1]"
    )


UI_WAIT_MS = 240_000  # each wait in the page; under load the v1 UI's bundle boots slowly


def new_ui_page(browser: Any) -> Any:
    """A 1440x1000 page whose waits (elements, navigations, ``expect``) allow UI_WAIT_MS."""
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1440, "height": 1000})
    page.set_default_timeout(UI_WAIT_MS)
    page.set_default_navigation_timeout(UI_WAIT_MS)
    expect.set_options(timeout=UI_WAIT_MS)
    return page


def launch_chromium(pw: Any) -> Any:
    from tests.support import CHROMIUM, CHROMIUM_ARGS

    return pw.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
