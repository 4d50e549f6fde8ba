"""The emulator service without sockets: determinism, registration, ledgers, usage endpoints,
and the ``pairlab emulator`` commands."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pairlab.adapters.backends.local import agent_path
from pairlab.adapters.clients.registry import resolve_cli
from pairlab.adapters.emulator.model_api import Incoming
from pairlab.adapters.emulator.service import EmulatorService
from pairlab.core.accounting.tokenizer import load_token_counter
from pairlab.core.emulator.quota_model import FIVE_HOUR_S, AccountPlan
from pairlab.core.emulator.request_ledger import (
    EpisodeRegistration,
    Fault,
    RequestRow,
    ground_truth,
    read_ledger,
)
from pairlab.core.errors import EnvironmentUnavailable, InvalidInputError
from tests.emulator_support import (
    CODEX_SEARCH_TOOL,
    claude_request,
    claude_tool_result,
    codex_request,
)
from tests.support import CATALOG_DIR, REPO_ROOT, cli_exit, require

T0 = 1_800_000_000.0


def post(service: EmulatorService, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    reply = service.handle(Incoming("POST", path, {"x-api-key": "k"}, json.dumps(body).encode()))
    reply.on_delivered()  # what the HTTP layer does once the reply is out
    return reply.status, json.loads(reply.body or b"{}")


def play_episode(ledger_dir: Path, registration: EpisodeRegistration) -> list[RequestRow]:
    service = EmulatorService(ledger_dir, catalog_dir=CATALOG_DIR, clock=lambda: T0)
    episode = service.register(registration)
    history: list[dict[str, Any]] = []
    for _ in range(20):
        status, message = post(
            service, f"/e/{episode.token}/v1/messages", claude_request("go", history)
        )
        if status != 200:
            continue  # an injected fault: the client asks again
        uses = [b for b in message["content"] if b["type"] == "tool_use"]
        if not uses:
            break
        history += claude_tool_result(uses[0], "result")
    return read_ledger(episode.ledger_path)[1]


def test_the_same_seed_and_requests_give_the_same_ledger(tmp_path: Path) -> None:
    reg = EpisodeRegistration(
        task_id="refactor-rename-total",
        seed=11,
        faults=[Fault(at_request=2, kind="overloaded-529")],
    )
    first = play_episode(tmp_path / "a", reg)
    second = play_episode(tmp_path / "b", reg)
    strip = {"duration_ms"}
    assert [r.model_dump(exclude=strip) for r in first] == [
        r.model_dump(exclude=strip) for r in second
    ]
    other = play_episode(tmp_path / "c", reg.model_copy(update={"seed": 12}))
    assert [r.turn for r in other] != [r.turn for r in first]


def test_registration_through_the_admin_api_and_the_summary(tmp_path: Path) -> None:
    service = EmulatorService(tmp_path, catalog_dir=CATALOG_DIR, clock=lambda: T0)
    status, answer = post(
        service, "/admin/episodes", {"task_id": "fix-median", "token": "ep-one", "seed": 2}
    )
    assert status == 201 and answer["token"] == "ep-one"
    assert Path(answer["ledger"]) == tmp_path / "ep-one.jsonl"
    assert post(service, "/admin/episodes", {"task_id": "fix-median", "token": "ep-one"})[0] == 400
    assert post(service, "/admin/episodes", {"task_id": "no-such-task"})[0] == 400
    assert post(service, "/admin/episodes", {"task_id": "fix-median", "bogus": 1})[0] == 400
    post(service, "/e/ep-one/v1/messages", claude_request("go"))
    summary = service.handle(Incoming("GET", "/admin/episodes/ep-one", {}, b""))
    data = json.loads(summary.body or b"{}")
    assert data["model_requests"] == 1 and data["delivered"] == 1
    assert data["ground_truth"]["output"] > 0 and data["ground_truth"]["cache_write_5m"] > 0
    episode, rows = read_ledger(tmp_path / "ep-one.jsonl")
    assert episode.registration.seed == 2 and "cl100k" in episode.tokenizer
    assert rows[0].system_sha256 and rows[0].tools_offered == ["Bash", "Edit", "Read", "Write"]
    assert rows[0].tool_search_sources is None  # no tool search offered


def test_codex_tool_search_sources_are_recorded(tmp_path: Path) -> None:
    """Codex defers MCP tools behind tool_search, whose description names the servers:
    the ledger keeps it, so a reader can tell which servers a request could reach."""
    service = EmulatorService(tmp_path, catalog_dir=CATALOG_DIR, clock=lambda: T0)
    post(service, "/admin/episodes", {"task_id": "fix-median", "token": "ep-cx"})
    post(service, "/e/ep-cx/v1/responses", codex_request("go", search=True))
    post(service, "/e/ep-cx/v1/responses", codex_request("go"))
    _, rows = read_ledger(tmp_path / "ep-cx.jsonl")
    assert rows[0].tool_search_sources == CODEX_SEARCH_TOOL["description"]
    assert rows[1].tool_search_sources is None
    # what each request carried of each MCP server, in cl100k tokens (certify's rule: here
    # the source line naming it; adapters/emulator/mcp_definitions); none: measured, empty
    counter = load_token_counter()
    assert rows[0].mcp_definition_tokens == {"token-optimizer": counter.count("- token-optimizer")}
    assert rows[1].mcp_definition_tokens == {}


def test_unknown_task_and_bad_tokens_are_refused(tmp_path: Path) -> None:
    service = EmulatorService(tmp_path, catalog_dir=CATALOG_DIR)
    with pytest.raises(InvalidInputError, match="unknown task"):
        service.register(EpisodeRegistration(task_id="nope"))
    with pytest.raises(InvalidInputError, match="token"):
        service.register(EpisodeRegistration(task_id="fix-median"), token="../escape")


def test_an_exhausted_window_refuses_until_it_resets(tmp_path: Path) -> None:
    now = [T0]
    plans = {"tiny": AccountPlan(five_hour_limit=1000, seven_day_limit=1_000_000)}
    service = EmulatorService(
        tmp_path, catalog_dir=CATALOG_DIR, clock=lambda: now[0], accounts=plans
    )
    episode = service.register(EpisodeRegistration(task_id="fix-median", account="tiny"))
    path = f"/e/{episode.token}/v1/messages"
    assert post(service, path, claude_request("go"))[0] == 200  # consumes well over 1,000
    status, error = post(service, path, claude_request("go"))
    assert status == 429 and error["error"]["type"] == "rate_limit_error"
    assert "five_hour" in error["error"]["message"]
    now[0] = T0 + FIVE_HOUR_S + 1
    assert post(service, path, claude_request("go"))[0] == 200
    rows = read_ledger(episode.ledger_path)[1]
    assert [(r.status, r.billed) for r in rows] == [(200, True), (429, False), (200, True)]
    assert rows[1].quota_before is not None and rows[1].quota_before.five_hour.utilization == 1.0


def test_usage_endpoints_serve_each_account(tmp_path: Path) -> None:
    service = EmulatorService(tmp_path, catalog_dir=CATALOG_DIR, clock=lambda: T0)
    episode = service.register(EpisodeRegistration(task_id="fix-median", account="acct-1"))
    post(service, f"/e/{episode.token}/v1/messages", claude_request("go"))
    by_episode = service.handle(Incoming("GET", f"/e/{episode.token}/api/oauth/usage", {}, b""))
    by_account = service.handle(Incoming("GET", "/a/acct-1/api/oauth/usage", {}, b""))
    assert by_episode.body == by_account.body
    codex = json.loads(
        service.handle(Incoming("GET", "/a/acct-1/backend-api/wham/usage", {}, b"")).body or b""
    )
    assert codex["rate_limit"]["primary_window"]["limit_window_seconds"] == 18000
    other = json.loads(
        service.handle(Incoming("GET", "/a/acct-2/api/oauth/usage", {}, b"")).body or b""
    )
    assert other["five_hour"] == {"utilization": 0.0, "resets_at": None}


def test_the_ledger_command_summarises_a_ledger(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = play_episode(tmp_path, EpisodeRegistration(task_id="fix-median", seed=2))
    ledger = next(tmp_path.glob("ep-*.jsonl"))
    assert cli_exit(["emulator", "ledger", str(ledger), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["requests"] == len(rows) and summary["billed"] == len(rows)
    assert summary["ground_truth"]["output"] == sum(r.usage.output or 0 for r in rows if r.usage)
    (tmp_path / "broken.jsonl").write_text("{not json\n")
    assert cli_exit(["emulator", "ledger", str(tmp_path / "broken.jsonl"), "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["reason_code"] == "malformed-input"


def test_real_clis_resolve_with_their_versions_and_are_on_an_episodes_path() -> None:
    try:
        found = [resolve_cli("claude"), resolve_cli("codex")]
    except EnvironmentUnavailable as exc:
        require(False, exc.message)
        return
    assert [c.version for c in found] == ["2.1.332", "0.163.0"]  # the versions the lock pins
    path = agent_path("/usr/bin:/bin")
    for cli in found:
        assert shutil.which(cli.name, path=path) == str(cli.binary)
    assert shutil.which("rg", path=path) is not None  # Codex's bundled helper


def test_a_broken_wheel_is_an_environment_error_with_a_reason(tmp_path: Path) -> None:
    """A claude_agent_sdk without its bundled binary (a broken install): exit 3, cli-unavailable."""
    shadow = tmp_path / "claude_agent_sdk"
    shadow.mkdir()
    (shadow / "__init__.py").write_text("")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{REPO_ROOT}"}
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from pairlab.cli import main; main(['emulator', 'clis', '--json'])",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 3, done.stderr
    error = json.loads(done.stdout)
    assert error["reason_code"] == "cli-unavailable" and "claude" in error["error"]


def _ask(service: EmulatorService, method: str, path: str, headers: dict[str, str]) -> Any:
    reply = service.handle(Incoming(method, path, headers, b"{}"))
    reply.on_delivered()
    return reply


ANTHROPIC_SDK = {"anthropic-version": "2023-06-01", "x-api-key": "k"}
OPENAI_SDK = {"authorization": "Bearer sk-test"}


def test_an_unserved_path_under_an_episode_is_a_readable_row_in_its_providers_shape(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    service = EmulatorService(tmp_path, catalog_dir=CATALOG_DIR, clock=lambda: T0)
    episode = service.register(EpisodeRegistration(task_id="fix-median", seed=2), token="ep-m1")
    post(service, "/e/ep-m1/v1/messages", claude_request("go"))
    asked = [
        ("GET", "/e/ep-m1/v1/models", OPENAI_SDK, "openai"),
        ("POST", "/e/ep-m1/v1/chat/completions", {}, "openai"),
        ("GET", "/e/ep-m1/v1/models", ANTHROPIC_SDK, "anthropic"),
        ("POST", "/e/ep-m1/v1/messages/batches", OPENAI_SDK, "anthropic"),
    ]
    replies = [_ask(service, m, p, h) for m, p, h, _ in asked]
    rows = read_ledger(episode.ledger_path)[1]
    assert [r.status for r in rows] == [200, 404, 404, 404, 404]
    for (_, _, _, provider), reply, row in zip(asked, replies, rows[1:], strict=True):
        body = json.loads(reply.body)
        assert reply.status == 404 and row.provider == provider
        assert row.request_index == -1 and not row.billed and row.usage is None
        if provider == "openai":  # OpenAI's shape: no envelope type, x-request-id
            assert set(body) == {"error"} and body["error"]["type"] == "invalid_request_error"
            assert body["error"]["message"].startswith("Invalid URL (")
            assert reply.headers["x-request-id"] == row.request_id
        else:
            assert body["type"] == "error" and body["error"]["type"] == "not_found_error"
            assert reply.headers["request-id"] == body["request_id"] == row.request_id
    assert len({r.request_id for r in rows}) == len(rows)
    assert ground_truth(rows) == rows[0].usage  # only the model request is billed
    summary = _ask(service, "GET", "/admin/episodes/ep-m1", {})
    assert summary.status == 200
    assert json.loads(summary.body)["ground_truth"] == ground_truth(rows).model_dump(mode="json")
    assert cli_exit(["emulator", "ledger", str(episode.ledger_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["requests"] == 5


def test_a_legacy_unrouted_line_reads_as_its_request_row(tmp_path: Path) -> None:
    """Ledgers of older emulators logged an unknown route as ``kind: unrouted``."""
    service = EmulatorService(tmp_path, catalog_dir=CATALOG_DIR, clock=lambda: T0)
    episode = service.register(EpisodeRegistration(task_id="fix-median"), token="ep-old")
    post(service, "/e/ep-old/v1/messages", claude_request("go"))
    legacy = {"kind": "unrouted", "at": T0, "method": "POST", "path": "/e/ep-old/v1/x"}
    with episode.ledger_path.open("a") as ledger:
        ledger.write(json.dumps({**legacy, "status": 404, "message": "not served"}) + "\n")
    rows = read_ledger(episode.ledger_path)[1]
    assert [(r.status, r.request_index, r.request_id) for r in rows][1] == (404, -1, "")
    assert rows[1].error_message == "not served" and ground_truth(rows) == rows[0].usage
    with episode.ledger_path.open("a") as ledger:
        ledger.write(json.dumps({**legacy, "status": "four"}) + "\n")
    with pytest.raises(InvalidInputError, match=r"ep-old.jsonl:4: .*status"):
        read_ledger(episode.ledger_path)


def test_every_answer_carries_a_request_id(tmp_path: Path) -> None:
    service = EmulatorService(tmp_path, catalog_dir=CATALOG_DIR, clock=lambda: T0)
    episode = service.register(
        EpisodeRegistration(
            task_id="fix-median", faults=[Fault(at_request=1, kind="rate-limit-429")]
        )
    )
    token = episode.token
    malformed = _ask(service, "POST", f"/e/{token}/v1/messages", ANTHROPIC_SDK)
    assert malformed.status == 400 and malformed.headers["request-id"]
    body = json.dumps(claude_request("go")).encode()
    limited = service.handle(Incoming("POST", f"/e/{token}/v1/messages", ANTHROPIC_SDK, body))
    assert limited.status == 429
    assert limited.headers["request-id"] == json.loads(limited.body or b"")["request_id"]
    openai_bad = _ask(service, "POST", f"/e/{token}/v1/responses", OPENAI_SDK)
    assert openai_bad.status == 400 and openai_bad.headers["x-request-id"]
    unknown = _ask(service, "GET", "/e/no-such-token/v1/models", OPENAI_SDK)
    assert unknown.status == 404 and "no-such-token" in json.loads(unknown.body)["error"]["message"]
    line = json.loads((tmp_path / "unrouted.jsonl").read_text().splitlines()[-1])
    assert line["request_id"] == unknown.headers["x-request-id"] and line["provider"] == "openai"
    claude_usage = _ask(service, "GET", f"/e/{token}/api/oauth/usage", {})
    codex_usage = _ask(service, "GET", "/a/default/backend-api/wham/usage", {})
    assert claude_usage.headers["request-id"] and codex_usage.headers["x-request-id"]
    head = _ask(service, "HEAD", f"/e/{token}", ANTHROPIC_SDK)
    assert head.status == 200 and head.headers["request-id"]


def test_the_version_probe_leaves_the_users_home_untouched(tmp_path: Path) -> None:
    """``codex --version`` sets up helper links under ``$CODEX_HOME/tmp``; the probe runs it
    with a throwaway HOME, so ``pairlab emulator clis`` creates nothing in the user's."""
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "CODEX_HOME"}
    env |= {"HOME": str(home), "PYTHONPATH": str(REPO_ROOT), "TMPDIR": str(tmp_path / "t")}
    (tmp_path / "t").mkdir()
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from pairlab.cli import main; main(['emulator', 'clis', '--json'])",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    require(done.returncode != 3, "the bundled CLIs are not installed")
    assert done.returncode == 0, done.stderr
    assert {c["name"] for c in json.loads(done.stdout)} == {"claude", "codex"}
    assert list(home.iterdir()) == []
    assert list((tmp_path / "t").iterdir()) == []  # the throwaway HOME is removed too


@pytest.mark.parametrize(
    ("path", "request_body", "error_type"),
    [
        ("v1/messages", claude_request("go"), "rate_limit_error"),
        ("v1/responses", codex_request("go"), "usage_limit_reached"),
    ],
)
def test_a_held_usage_limit_refuses_every_request_from_its_own_on(
    tmp_path: Path, path: str, request_body: dict[str, Any], error_type: str
) -> None:
    """usage-limit-429 is a limit that lasts: the fault's request and every later one get
    the provider's 429 (the CLI's retries fail too); the one before it is answered."""
    service = EmulatorService(tmp_path, catalog_dir=CATALOG_DIR, clock=lambda: T0)
    fault = Fault(at_request=1, kind="usage-limit-429", retry_after_s=1)
    episode = service.register(EpisodeRegistration(task_id="fix-median", faults=[fault]))
    replies = [post(service, f"/e/{episode.token}/{path}", request_body) for _ in range(4)]
    assert [status for status, _ in replies] == [200, 429, 429, 429]
    assert {body["error"]["type"] for _, body in replies[1:]} == {error_type}
    rows = read_ledger(episode.ledger_path)[1]
    assert [r.fault for r in rows] == [None, *["usage-limit-429"] * 3]
    assert not any(r.billed for r in rows[1:])
    if path == "v1/messages":  # a subscription's window used up, as Claude Code reads it
        raw = service.handle(
            Incoming("POST", f"/e/{episode.token}/{path}", {"x-api-key": "k"},
                     json.dumps(request_body).encode())
        )  # fmt: skip
        assert raw.headers["anthropic-ratelimit-unified-status"] == "rejected"
        assert raw.headers["retry-after"] == "1"


def test_a_held_limit_set_and_lifted_on_a_registered_episode(tmp_path: Path) -> None:
    """``PUT /admin/episodes/<t>/faults``: the stand-in holds a usage limit from the
    episode's next model request and lifts it with ``[]``; each change is a ``faults``
    ledger row (the instrument's ground truth) that the ledger reader reads past."""
    service = EmulatorService(tmp_path, catalog_dir=CATALOG_DIR, clock=lambda: T0)
    token = service.register(EpisodeRegistration(task_id="fix-median")).token
    route = f"/admin/episodes/{token}/faults"

    def put(body: object) -> Any:
        return service.handle(Incoming("PUT", route, {}, json.dumps(body).encode()))

    def ask() -> int:
        return post(service, f"/e/{token}/v1/messages", claude_request("go"))[0]

    assert ask() == 200
    held = put({"faults": [{"kind": "usage-limit-429", "at_request": 1}]})
    assert held.status == 200 and json.loads(held.body)["from_request"] == 1
    assert [ask(), ask()] == [429, 429]
    assert put({"faults": []}).status == 200
    assert ask() == 200
    assert put({"faults": [{"kind": "no-such-fault", "at_request": 0}]}).status == 400
    assert put({"nothing": []}).status == 400
    assert service.handle(Incoming("PUT", "/admin/episodes/nobody/faults", {}, b"{}")).status == 404
    lines = [json.loads(line) for line in episode_lines(tmp_path / f"{token}.jsonl")]
    assert [(r["kind"], r.get("from_request")) for r in lines if r["kind"] == "faults"] == [
        ("faults", 1),
        ("faults", 3),
    ]
    rows = read_ledger(tmp_path / f"{token}.jsonl")[1]
    assert [(r.status, r.fault) for r in rows] == [
        (200, None), (429, "usage-limit-429"), (429, "usage-limit-429"), (200, None),
    ]  # fmt: skip


def episode_lines(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line.strip()]
