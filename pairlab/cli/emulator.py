"""``pairlab emulator serve|register|ledger|clis``: the provider emulator and the real CLIs.

* ``serve`` runs the emulator until interrupted and prints the URL it listens on
  (``--port 0`` picks a free port) as its first line; with ``--tls-cert``/``--tls-key``
  it serves HTTPS only (the stand-in for a provider or gateway behind TLS).
* ``register`` registers an episode at a running emulator (its admin API) and prints
  the token and the base URLs / environment to give the CLI.
* ``ledger`` summarises an episode ledger (requests, faults, the ground-truth vector).
* ``clis`` lists the real CLIs bundled in the pinned wheels (exit 3 when one is missing).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Annotated

import typer

from pairlab.cli.output import emit_json
from pairlab.core.errors import EnvironmentUnavailable, InvalidInputError, ReasonCode

emulator_app = typer.Typer(
    help="The provider emulator (Anthropic Messages + OpenAI Responses) and the real CLIs.",
    no_args_is_help=True,
)


def _parse_fault(text: str) -> dict[str, object]:
    """``KIND@INDEX`` (e.g. ``rate-limit-429@1``, ``cut-stream@2``)."""
    from pairlab.core.emulator.run_settings import parse_fault_rule

    rule = parse_fault_rule(text)
    if rule.task_id or rule.arm or rule.repetition is not None:
        raise InvalidInputError(
            f"fault '{text}' must be KIND@REQUEST_INDEX here (one episode)",
            reason=ReasonCode.INVALID_INPUT,
        )
    return rule.fault.model_dump(mode="json")


@emulator_app.command("serve")
def serve_command(
    host: Annotated[str, typer.Option(help="address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port (0 = a free one)")] = 8765,
    ledger_dir: Annotated[
        Path, typer.Option("--ledger-dir", help="one ground-truth ledger per episode goes here")
    ] = Path("emulator-ledgers"),
    catalog_dir: Annotated[
        Path | None, typer.Option("--catalog-dir", help="task catalog (default: the repository's)")
    ] = None,
    keep_requests: Annotated[
        bool, typer.Option("--keep-requests", help="also store every request body (audits)")
    ] = False,
    require_auth: Annotated[
        bool,
        typer.Option(
            "--require-auth",
            help="the stand-in provider: refuse a missing, wrong or expired credential with "
            "the provider's 401",
        ),
    ] = False,
    accept_credential: Annotated[
        list[str] | None,
        typer.Option(
            "--accept-credential",
            help="an accepted credential: env:VAR, file:PATH (a Codex auth.json too) or the "
            "value; repeatable",
        ),
    ] = None,
    expired_credential: Annotated[
        list[str] | None,
        typer.Option(
            "--expired-credential",
            help="a credential answered as expired (same forms); repeatable",
        ),
    ] = None,
    tls_cert: Annotated[
        Path | None,
        typer.Option(
            "--tls-cert",
            help="serve HTTPS with this certificate chain (PEM), e.g. one for a gateway's "
            "name from a private CA; needs --tls-key",
        ),
    ] = None,
    tls_key: Annotated[
        Path | None, typer.Option("--tls-key", help="the private key (PEM) of --tls-cert")
    ] = None,
) -> None:
    """Serve the emulator until interrupted."""
    from pairlab.adapters.emulator import ProviderEmulator
    from pairlab.adapters.emulator.auth_gate import AuthGate
    from pairlab.adapters.emulator.server import server_tls_context

    if (tls_cert is None) != (tls_key is None):
        raise InvalidInputError(
            "--tls-cert and --tls-key go together", reason=ReasonCode.INVALID_INPUT
        )
    tls = server_tls_context(tls_cert, tls_key) if tls_cert and tls_key else None
    if (accept_credential or expired_credential) and not require_auth:
        raise InvalidInputError(
            "--accept-credential and --expired-credential need --require-auth",
            reason=ReasonCode.INVALID_INPUT,
        )
    gate = (
        AuthGate.of(
            [_credential_source(c) for c in accept_credential or []],
            [_credential_source(c) for c in expired_credential or []],
        )
        if require_auth
        else None
    )
    emulator = ProviderEmulator(
        ledger_dir,
        host=host,
        port=port,
        catalog_dir=catalog_dir,
        keep_requests=keep_requests,
        auth=gate,
        tls=tls,
    ).start()
    auth_note = f", credentials required ({len(gate.accepted)} accepted)" if gate else ""
    typer.echo(f"pairlab emulator listening on {emulator.url} (ledgers in {ledger_dir}{auth_note})")
    try:
        emulator.serve_forever()
    except KeyboardInterrupt:
        emulator.stop()


def _credential_source(text: str) -> str:
    """``env:VAR`` -> the variable's value, ``file:PATH`` -> the file's text, else ``text``."""
    import os

    if text.startswith("env:"):
        value = os.environ.get(text[4:], "")
        if not value.strip():
            raise EnvironmentUnavailable(
                f"environment variable {text[4:]} is unset or empty",
                reason=ReasonCode.CREDENTIAL_MISSING,
            )
        return value.strip()
    if text.startswith("file:"):
        try:
            return Path(text[5:]).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise EnvironmentUnavailable(
                f"cannot read credential file {text[5:]}: {exc}",
                reason=ReasonCode.CREDENTIAL_MISSING,
            ) from exc
    return text


def _refusal(body: str) -> tuple[str, ReasonCode]:
    """The admin API's error text and reason code, taken out of its JSON answer (so the
    CLI's own error output does not wrap one JSON document inside another)."""
    try:
        data = json.loads(body)
    except ValueError:
        return body.strip() or "(no answer body)", ReasonCode.INVALID_INPUT
    text = data.get("error") if isinstance(data, dict) else None
    if not isinstance(text, str):
        return body.strip(), ReasonCode.INVALID_INPUT
    try:
        reason = ReasonCode(str(data.get("reason_code")))
    except ValueError:
        reason = ReasonCode.INVALID_INPUT
    return text, reason


def _post_json(url: str, payload: dict[str, object]) -> dict[str, object]:
    request = urllib.request.Request(
        url,
        data=json.dumps(payload).encode(),
        headers={"content-type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            data = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        detail, reason = _refusal(exc.read().decode(errors="replace"))
        raise InvalidInputError(
            f"the emulator refused the registration: {detail}", reason=reason
        ) from exc
    except (urllib.error.URLError, OSError) as exc:
        raise EnvironmentUnavailable(
            f"no emulator at {url}: {exc}", reason=ReasonCode.ENVIRONMENT_UNAVAILABLE
        ) from exc
    if not isinstance(data, dict):
        raise EnvironmentUnavailable(f"{url} did not answer like the emulator")
    return data


@emulator_app.command("register")
def register_command(
    task: Annotated[str, typer.Option("--task", help="catalog task id")],
    url: Annotated[str, typer.Option(help="the running emulator")] = "http://127.0.0.1:8765",
    arm: Annotated[str, typer.Option(help="arm (recorded in the ledger)")] = "baseline",
    seed: Annotated[int, typer.Option(help="the scripted model's seed")] = 0,
    account: Annotated[str, typer.Option(help="quota/cache account")] = "default",
    fault: Annotated[
        list[str] | None, typer.Option("--fault", help="KIND@REQUEST_INDEX, repeatable")
    ] = None,
    token: Annotated[str | None, typer.Option(help="episode token (default: derived)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
) -> None:
    """Register an episode at a running emulator; print where its CLI should point."""
    payload: dict[str, object] = {
        "task_id": task,
        "arm": arm,
        "seed": seed,
        "account": account,
        "faults": [_parse_fault(f) for f in fault or []],
    }
    if token:
        payload["token"] = token
    answer = _post_json(url.rstrip("/") + "/admin/episodes", payload)
    base = f"{url.rstrip('/')}/e/{answer['token']}"
    result = {
        **answer,
        "anthropic_base_url": base,
        "openai_base_url": f"{base}/v1",
        "chatgpt_base_url": f"{base}/backend-api/codex",  # a Codex ChatGPT login's provider
    }
    if as_json:
        emit_json(result)
        return
    typer.echo(f"token {answer['token']}  ledger {answer['ledger']}")
    typer.echo(f"  claude: ANTHROPIC_BASE_URL={base}")
    typer.echo(f"  codex:  base_url={base}/v1 (wire_api=responses)")
    typer.echo(f"  codex with a ChatGPT login: {base}/backend-api/codex")


@emulator_app.command("ledger")
def ledger_command(
    path: Annotated[Path, typer.Argument(help="an episode ledger (<token>.jsonl)")],
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
) -> None:
    """Summarise one episode ledger: requests, faults, ground truth."""
    from pairlab.core.emulator.request_ledger import ground_truth, read_ledger

    episode, rows = read_ledger(path)
    truth = ground_truth(rows)
    summary = {
        "token": episode.token,
        "registration": episode.registration.model_dump(mode="json"),
        "tokenizer": episode.tokenizer,
        "requests": len(rows),
        "billed": sum(1 for r in rows if r.billed),
        "faults": [f"{r.fault}@{r.request_index}" for r in rows if r.fault],
        "ground_truth": truth.model_dump(mode="json"),
    }
    if as_json:
        emit_json(summary)
        return
    typer.echo(
        f"{episode.token}: task {episode.registration.task_id}, arm {episode.registration.arm}"
    )
    for row in rows:
        turn = row.turn.action if row.turn else "-"
        typer.echo(
            f"  #{row.request_index} {row.method} {row.path} {row.status} billed={row.billed} "
            f"fault={row.fault or '-'} turn={turn}"
        )
    dims = truth.model_dump(mode="json")
    typer.echo("  ground truth: " + "  ".join(f"{k}={v}" for k, v in dims.items()))


@emulator_app.command("clis")
def clis_command(
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
) -> None:
    """The real CLIs bundled in the pinned wheels, with their versions."""
    from pairlab.adapters.clients.registry import REAL_CLIS, resolve_cli

    found = [resolve_cli(name) for name in REAL_CLIS]  # raises (exit 3) when one is missing
    if as_json:
        emit_json([cli.to_json() for cli in found])
        return
    for cli in found:
        typer.echo(f"{cli.name} {cli.version}  {cli.binary}  (wheel {cli.wheel})")


def register(app: typer.Typer) -> None:
    app.add_typer(emulator_app, name="emulator")
