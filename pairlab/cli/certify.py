"""``pairlab certify``: check every runner profile without a model (DESIGN 8).

Exit 0 when no profile failed (profiles whose CLI cannot run here are
``not-live-certified``, which is not a pass and not a failure), 1 on any failure.
With ``--account`` the run, passed or failed, is recorded on the account's record
(``accountCertification`` in ``--json``; ``pairlab account list`` shows it).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from pairlab.cli.output import emit_json

if TYPE_CHECKING:
    from pairlab.core.account_certification import AccountCertification


def register(app: typer.Typer) -> None:
    @app.command("certify")
    def certify(
        json_out: Annotated[bool, typer.Option("--json", help="print the report as JSON")] = False,
        profile: Annotated[
            str | None, typer.Option("--profile", help="certify only this profile (file stem)")
        ] = None,
        backend: Annotated[
            str, typer.Option("--backend", help="local | docker (where the probe episodes run)")
        ] = "local",
        profiles_dir: Annotated[
            Path | None,
            typer.Option(
                "--profiles-dir", help="runner profiles directory (default runner_profiles/)"
            ),
        ] = None,
        intervention: Annotated[
            str,
            typer.Option(
                "--intervention",
                help="what the treated arms run: an id under interventions/ or a manifest's path",
            ),
        ] = "reference",
        account: Annotated[
            str | None,
            typer.Option(
                "--account",
                help="run the probe on this registered account's path: its credential in the "
                "CLI's form, the stand-in requiring it (default profile: the account's client)",
            ),
        ] = None,
    ) -> None:
        """Validate runner profiles, record CLI versions, and run the isolation probe."""
        from pairlab.adapters.certify.account_path import CertifyAccount
        from pairlab.adapters.certify.sim import certify_profiles
        from pairlab.adapters.interventions import load_intervention

        wired = load_intervention(intervention)  # a refused manifest: exit 2, nothing runs
        on_account = None
        if account is not None:  # unknown: exit 2 with the known names; no credential: 3
            on_account = CertifyAccount.load(account, client=profile)
            profile = profile or on_account.record.client
        report = certify_profiles(
            backend_name=backend,
            only=profile,
            directory=profiles_dir,
            intervention=wired,
            account=on_account,
        )
        doc = report.to_json()
        recorded = None
        if on_account is not None and report.profiles:
            recorded = on_account.record_certification(report.profiles[0], doc, backend)
        if json_out:
            if on_account is not None:  # outside what report_sha256 hashed
                doc = {
                    **doc,
                    "accountCertification": None
                    if recorded is None
                    else recorded.model_dump(mode="json"),
                }
            emit_json(doc)
        else:
            for result in report.profiles:
                typer.echo(
                    f"{result.profile} ({result.client} {result.version or '?'}): {result.status}"
                )
                for check in result.checks:
                    mark = "ok  " if check.passed else "FAIL"
                    typer.echo(f"  {mark} {check.name}: {check.detail}")
                if result.account is not None:
                    typer.echo(f"  on account {result.account['name']} ({result.account['kind']})")
                if result.intervention is not None:
                    ident = result.intervention
                    typer.echo(
                        f"  intervention {ident['id']} {ident['version']} "
                        f"(manifest {ident['manifestSha256'][:12]})"
                    )
                for arm, names in (result.server_tools or {}).items():
                    typer.echo(f"  the server's tools/list ({arm}): {', '.join(names) or 'none'}")
                for listed in result.listed_tools or []:
                    typer.echo(f"  tools listed in {listed.line()}")
                if result.matrix is not None:
                    typer.echo("  what each episode saw (x = seen):")
                    for line in result.matrix.render():
                        typer.echo(f"    {line}")
            if on_account is not None:
                typer.echo(_recorded_line(on_account.record.name, recorded))
            typer.echo("certify: " + ("passed" if report.passed else "FAILED"))
        raise typer.Exit(0 if report.passed else 1)


def _recorded_line(name: str, recorded: AccountCertification | None) -> str:
    if recorded is None:
        return f"nothing recorded on account {name} (the profile was not certified here)"
    what = "certified" if recorded.passed else "certify FAILED"
    return f"recorded on account {name}: {what} {recorded.summary()}"
