"""`pairlab account add|list|remove|check`: an operator's own credentials, registered once.

The credential is read from an environment variable (``--from-env VAR``) or a file
(``--from-file PATH``), never from the command line itself (it would land in shell
history and process lists). Nothing these commands print contains a credential: ``list``
shows name, client, kind, provider URL, where it is stored, when it was added and its
certification (``pairlab certify --account``: certified, stale with why, failed, or not
certified; ``core/account_certification``). ``add --replace`` keeps the account's
certification, which then goes stale if what it proved changed. docs/accounts.md walks
through it.
``add --ca-file PATH`` declares the private CA of a gateway's TLS certificate (PEM
certificates, not a secret: stored in the record; see provider_tls).
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from pairlab.cli.output import emit_json
from pairlab.core.errors import EnvironmentUnavailable, InvalidInputError, ReasonCode

if TYPE_CHECKING:
    from pairlab.core.account_certification import AccountCertification
    from pairlab.core.accounts import AccountStore


def _read_credential(from_env: str | None, from_file: Path | None) -> str:
    if (from_env is None) == (from_file is None):
        raise InvalidInputError(
            "give exactly one of --from-env VAR or --from-file PATH",
            reason=ReasonCode.INVALID_INPUT,
        )
    if from_env is not None:
        value = os.environ.get(from_env, "")
        if not value.strip():
            raise EnvironmentUnavailable(
                f"environment variable {from_env} is unset or empty",
                reason=ReasonCode.CREDENTIAL_MISSING,
            )
        return value.strip()
    assert from_file is not None
    try:
        value = from_file.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise EnvironmentUnavailable(
            f"credential file {from_file} does not exist", reason=ReasonCode.CREDENTIAL_MISSING
        ) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(
            f"cannot read credential file {from_file}: {exc}", reason=ReasonCode.INPUT_READ_FAILED
        ) from exc
    return value.strip()


def _read_ca_file(path: Path) -> str:
    """The CA bundle of ``--ca-file``: its PEM certificates (core/accounts.check_ca_bundle)."""
    from pairlab.core.accounts import check_ca_bundle

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(
            f"cannot read --ca-file {path}: {exc}", reason=ReasonCode.INVALID_CA_BUNDLE
        ) from exc
    return check_ca_bundle(text, source=f"--ca-file {path}")


def register(app: typer.Typer) -> None:
    account = typer.Typer(
        help="Register the credentials of real accounts (Claude, Codex) once; never printed.",
        no_args_is_help=True,
    )
    app.add_typer(account, name="account")

    @account.command("add")
    def add_cmd(
        name: Annotated[str, typer.Argument(help="lower-case letters, digits, dashes")],
        client: Annotated[str, typer.Option("--client", help="claude or codex")],
        from_env: Annotated[
            str | None, typer.Option("--from-env", help="read the credential from this variable")
        ] = None,
        from_file: Annotated[
            Path | None,
            typer.Option("--from-file", help="read it from this file (Codex: its auth.json)"),
        ] = None,
        kind: Annotated[
            str | None,
            typer.Option(
                "--kind",
                help="api-key, subscription-token (claude) or chatgpt-auth-json (codex); "
                "recognised from the credential when left out",
            ),
        ] = None,
        provider_url: Annotated[
            str | None,
            typer.Option(
                "--provider-url",
                help="another provider URL (a gateway, a proxy, the stand-in); default: the "
                "CLI's own provider",
            ),
        ] = None,
        ca_file: Annotated[
            Path | None,
            typer.Option(
                "--ca-file",
                help="PEM certificate(s) of a private CA that signs the provider URL's TLS "
                "certificate (a corporate gateway); trusted besides the public roots, stored "
                "in the account record (not a secret)",
            ),
        ] = None,
        replace: Annotated[bool, typer.Option("--replace", help="overwrite an account")] = False,
        as_json: Annotated[bool, typer.Option("--json")] = False,
    ) -> None:
        """Store an account's credential (a Prefect Secret block, or the local mode-600 file)."""
        from pairlab.adapters.accounts.certification import certification_here
        from pairlab.adapters.accounts.selection import open_account_store
        from pairlab.core.accounts import (
            ACCOUNT_CLIENTS,
            Account,
            CredentialKind,
            check_account_name,
            recognise_kind,
        )

        check_account_name(name)
        if client not in ACCOUNT_CLIENTS:
            raise InvalidInputError(
                f"--client must be one of {', '.join(ACCOUNT_CLIENTS)}, not {client!r}",
                reason=ReasonCode.INVALID_ACCOUNT,
            )
        declared = None
        if kind is not None:
            try:
                declared = CredentialKind(kind)
            except ValueError as exc:
                allowed = ", ".join(k.value for k in CredentialKind)
                raise InvalidInputError(
                    f"--kind must be one of {allowed}", reason=ReasonCode.INVALID_ACCOUNT
                ) from exc
        if provider_url is not None and not provider_url.startswith(("http://", "https://")):
            raise InvalidInputError(
                f"--provider-url {provider_url!r} is not an http(s) URL",
                reason=ReasonCode.INVALID_ACCOUNT,
            )
        ca_bundle = _read_ca_file(ca_file) if ca_file is not None else None
        credential = _read_credential(from_env, from_file)
        seen = recognise_kind(client, credential, declared)
        store = open_account_store()
        record = Account(
            name=name,
            client=client,
            kind=seen,
            provider_url=provider_url.rstrip("/") if provider_url else None,
            stored_in=store.location,
            added_at=datetime.now(UTC).replace(microsecond=0),
            certification=_kept_certification(store, name) if replace else None,
            ca_bundle=ca_bundle,
        )
        store.save(record, credential, replace=replace)
        status = certification_here(record)
        if as_json:
            emit_json({"account": {**record.to_json(), "certification": status.to_json(name)}})
            return
        typer.echo(f"added {name}: {client} {seen} in {store.location}")
        if record.certification is not None:
            typer.echo(f"  certification kept: {status.line(name)}")

    @account.command("list")
    def list_cmd(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
        """Registered accounts: name, client, kind, provider, where stored, when added, and
        each one's certification (certified, stale with why, failed, not certified)."""
        from pairlab.adapters.accounts.certification import certification_here
        from pairlab.adapters.accounts.selection import open_account_store

        store = open_account_store()
        records = [store.record(n) for n in store.names()]
        statuses = [certification_here(r) for r in records]
        if as_json:
            accounts = [
                {**r.to_json(), "certification": status.to_json(r.name)}
                for r, status in zip(records, statuses, strict=True)
            ]
            emit_json({"store": store.location, "accounts": accounts})
            return
        typer.echo(f"store: {store.location}")
        for r, status in zip(records, statuses, strict=True):
            ca = " (private CA)" if r.ca_bundle else ""
            typer.echo(
                f"{r.name:<20} {r.client:<7} {r.kind:<19} {r.effective_provider_url:<32} "
                f"{r.added_at.isoformat()}  {status.short()}{ca}"
            )
            typer.echo(f"  certification: {status.line(r.name)}")

    @account.command("remove")
    def remove_cmd(name: Annotated[str, typer.Argument()]) -> None:
        """Delete an account and its credential."""
        from pairlab.adapters.accounts.selection import open_account_store

        store = open_account_store()
        store.remove(name)
        typer.echo(f"removed {name} from {store.location}")

    @account.command("check")
    def check_cmd(
        name: Annotated[str, typer.Argument()],
        probe: Annotated[
            bool,
            typer.Option(
                "--probe",
                help="also ask the provider whether it takes the credential (the model list: "
                "no tokens spent); a refusal exits 2, credential-rejected",
            ),
        ] = False,
        as_json: Annotated[bool, typer.Option("--json")] = False,
    ) -> None:
        """The account exists, its credential is present and of the recorded kind; and its
        certification (certified, stale with why, failed, not certified)."""
        from pairlab.adapters.accounts.certification import certification_here
        from pairlab.adapters.accounts.selection import load_account
        from pairlab.core.accounts import recognise_kind

        record, credential = load_account(name)
        recognise_kind(record.client, credential, record.kind)
        status = None
        if probe:
            from pairlab.adapters.accounts.probe import probe_credential

            status = probe_credential(record, credential)
        certified = certification_here(record)
        if as_json:
            emit_json(
                {
                    "account": {**record.to_json(), "certification": certified.to_json(name)},
                    "credentialPresent": True,
                    "probeStatus": status,
                }
            )
            return
        typer.echo(f"{name}: {record.client} {record.kind} present ({record.stored_in})")
        typer.echo(f"  certification: {certified.line(name)}")
        if status is not None:
            typer.echo(f"  {record.effective_provider_url} did not refuse it (HTTP {status})")


def _kept_certification(store: AccountStore, name: str) -> AccountCertification | None:
    """The certification of the account ``add --replace`` overwrites (None when there is
    none, or its record no longer reads): it stays on the new record and goes stale if the
    new one's provider URL, client or kind is not the certified one."""
    if name not in store.names():
        return None
    try:
        return store.record(name).certification
    except InvalidInputError:
        return None
