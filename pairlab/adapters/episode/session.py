"""The episode lifecycle's parts, written once: the run's environment, a prepared episode
with a guaranteed cleanup, and the collection of what an episode left.

Every runner of episodes (the eval and canary flows, ``pairlab episode run``, both
certify probes, the benches) assembles these parts and re-implements no step:

* :func:`open_run_environment` always returns a :class:`RunEnvironment` (the backend
  to use, the profile as wired, the provider emulator when the profile runs against
  one), so no caller branches on the emulator;
* :func:`prepared` prepares an episode, yields it, and cleans it up whatever happened;
* :func:`collect_episode` copies the files out and reads what they hold: usage, the
  MCP ledger, the final answer, the grader checks and the finding evidence.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from pairlab.adapters.backends.base import (
    CollectedFiles,
    EpisodeSpec,
    ExecutionBackend,
    PreparedEpisode,
    RunOutcome,
)
from pairlab.adapters.clients.base import json_lines
from pairlab.adapters.episode.io import (
    EpisodeUsage,
    extract_final_answer,
    ingest_ledger,
    read_episode_usage,
    usage_files,
)
from pairlab.core.accounts import AccountStamp
from pairlab.core.emulator.run_settings import EmulatorSettings
from pairlab.core.errors import PairlabError
from pairlab.core.findings.evidence import EpisodeEvidence
from pairlab.core.intervention_health import BASELINE as BASELINE_ARM
from pairlab.core.intervention_health import (
    InterventionHealth,
    judge_intervention,
    tool_outcomes,
)
from pairlab.core.provider_limit import ProviderLimit, provider_limit
from pairlab.core.schemas.catalog import TaskEntry
from pairlab.core.schemas.episode import GraderCheck
from pairlab.core.schemas.profile import RunnerProfile
from pairlab.core.schemas.usage import UsageVector

if TYPE_CHECKING:  # the emulator is imported only by runs that open one
    from pairlab.adapters.accounts.provider_tls import ProviderCaFile
    from pairlab.adapters.backends.run_network import RunNetwork
    from pairlab.adapters.run.provider import EpisodeEndpoint, GroundTruthCheck, RunEndpoint


@dataclass(frozen=True)
class RunEnvironment:
    """Where a run's episodes execute: the backend, the profile as wired (against the
    provider emulator when ``provider`` is set) and the emulator itself (or None)."""

    backend: ExecutionBackend
    profile: RunnerProfile
    provider: RunEndpoint | None = None
    account: AccountStamp | None = None  # the registered account it runs on (never its credential)
    network: RunNetwork | None = None  # an account on Docker: the run network to its provider
    ca_file: ProviderCaFile | None = None  # an account's private CA, as a file for the run

    def register(
        self,
        *,
        episode_id: str,
        task_id: str,
        arm: str,
        repetition: int,
        seed: int,
        replanned: bool = False,
    ) -> EpisodeEndpoint | None:
        """The episode's own base URL on the emulator (None: no emulator). ``replanned``:
        its pair runs again after a provider limit (held faults no longer apply)."""
        if self.provider is None:
            return None
        return self.provider.register(
            episode_id=episode_id,
            task_id=task_id,
            arm=arm,
            repetition=repetition,
            seed=seed,
            replanned=replanned,
        )

    def provider_limit(
        self, registered: EpisodeEndpoint | None, stdout: str
    ) -> ProviderLimit | None:
        """The provider limit that ended the episode (core/provider_limit.py): read from the
        CLI's own output, else from the emulator's ledger when the run has one."""
        rows = registered.handle.rows() if registered is not None else None
        return provider_limit(self.profile.client, json_lines(stdout), rows)

    def check_episode(
        self,
        registered: EpisodeEndpoint | None,
        episode_dir: Path,
        *,
        reader: UsageVector | None,
        stdout: str,
    ) -> GroundTruthCheck | None:
        """The emulator's ground truth against the usage read (None: no emulator)."""
        if self.provider is None or registered is None:
            return None
        return self.provider.check_episode(
            registered,
            episode_dir,
            client=self.profile.client,
            reader=reader,
            stdout=stdout,
        )

    def check_intervention(
        self,
        registered: EpisodeEndpoint | None,
        *,
        arm: str,
        stdout: str,
        stderr: str,
        files: CollectedFiles,
        stdout_truncated: bool = False,
    ) -> InterventionHealth | None:
        """Whether a treated episode's intervention was there (``loaded``) or why not
        (``core/intervention_health``): from the CLI's own account of the server (its
        record's ``server_report``: stdout and the collected HOME) and the emulator's
        ledger of what each request offered. None for the baseline, for a profile with a
        fixed treatment of its own (no ``intervention_wiring``: the simulator) and when
        nothing was observed. Its ``tools``: the intervention's calls and errors from the
        CLI's transcript (None when stdout was cut at the backend's cap: a count of part of
        it would pass for the whole), oversized results from the ledger."""
        stamp = self.profile.intervention
        if (
            arm == BASELINE_ARM
            or stamp is None
            or stamp.server_name is None
            or self.profile.intervention_wiring is None
        ):
            return None
        from pairlab.adapters.clients.registry import REAL_CLIS

        cli = REAL_CLIS.get(self.profile.client)
        home = files.dest / "home"
        report = (
            cli.server_report(stdout, stderr, home, stamp.server_name) if cli is not None else None
        )
        rows = (
            registered.handle.rows()
            if self.provider is not None and registered is not None
            else None
        )
        health = judge_intervention(
            arm=arm, server_name=stamp.server_name, requests=rows, report=report
        )
        if health is None:
            return None
        # a cut transcript (the backend keeps 8 MiB of stdout) would undercount: unknown
        whole = cli is not None and not stdout_truncated
        seen = cli.tool_calls_seen(stdout, stamp.server_name) if whole and cli else None
        return replace(health, tools=tool_outcomes(seen, rows, stamp.server_name))

    def stop_on_account_failure(self, stdout: str, usage: UsageVector | None) -> None:
        """On an account, stop the run at an episode that did not measure the agent because
        of the account: the provider rejected its credential (``credential-rejected``,
        exit 2: adapters/accounts/rejection.py) or no request reached the provider
        (``provider-unreachable``, exit 3, with the provider's host and port and, on
        Docker, the run network's relay's last failed connection:
        adapters/accounts/unreachable.py). ``usage``: what the episode's provider-native
        usage said (None: none read). Nothing to do without an account."""
        if self.account is None:
            return
        from pairlab.adapters.accounts.rejection import stop_on_rejected_credential
        from pairlab.adapters.accounts.unreachable import stop_on_unreachable_provider

        client = self.profile.client
        stop_on_rejected_credential(client, self.account.name, stdout)
        stop_on_unreachable_provider(
            client,
            self.account,
            stdout,
            usage_seen=usage is not None,
            relay_failure=self.network.relay_failure() if self.network is not None else None,
        )

    def close(self) -> None:
        if self.provider is not None:
            self.provider.close()
        if self.network is not None:
            self.network.close()
        if self.ca_file is not None:
            self.ca_file.close()


def open_run_environment(
    profile: RunnerProfile,
    *,
    backend_name: str,
    run_id: str,
    ledger_dir: Path,
    settings: EmulatorSettings | None = None,
    with_provider: bool = True,
    account: str | None = None,
) -> RunEnvironment:
    """The run's environment. With ``account``, the profile runs on that registered
    account (``adapters/accounts/episode_wiring``: its provider URL, its credential as the
    CLI's one secret) and no emulator is started. A profile with ``endpoint: emulator``
    gets the provider emulator (and, on Docker, its run network) unless ``with_provider``
    is False (the work-pool dispatcher: each worker opens its own); any other gets the
    named backend."""
    if account is not None:
        return _account_environment(profile, account, backend_name=backend_name, run_id=run_id)
    if profile.endpoint == "emulator" and with_provider:
        from pairlab.adapters.run.provider import open_run_endpoint

        provider = open_run_endpoint(
            profile,
            run_id=run_id,
            backend_name=backend_name,
            ledger_dir=ledger_dir,
            settings=settings,
        )
        return RunEnvironment(provider.backend, provider.profile, provider)
    from pairlab.adapters.backends.factory import make_backend

    return RunEnvironment(make_backend(backend_name, run_id=run_id), profile)


def _account_environment(
    profile: RunnerProfile, account: str, *, backend_name: str, run_id: str
) -> RunEnvironment:
    """The profile on a registered account; the credential goes only into the backend's
    host environment or its secret files (its name recorded, never its value). On Docker
    the episodes join a run network that reaches the account's provider alone
    (``adapters/accounts/provider_route``)."""
    import os

    from pairlab.adapters.accounts.certification import certification_here
    from pairlab.adapters.accounts.episode_wiring import (
        account_host_env,
        account_run_profile,
        account_secret_files,
        check_chatgpt_login,
    )
    from pairlab.adapters.accounts.provider_tls import PROVIDER_CA_MOUNT, check_provider_tls
    from pairlab.adapters.accounts.selection import load_account
    from pairlab.adapters.backends.factory import make_backend

    record, credential = load_account(account)
    check_chatgpt_login(record, credential)
    # an untrusted provider certificate is refused here: a CLI may only retry it
    check_provider_tls(record)
    files = account_secret_files(record, credential)
    stamp = AccountStamp.of(record, certification_here(record))
    from pairlab.adapters.accounts.provider_tls import ProviderCaFile

    ca_file = ProviderCaFile(record.ca_bundle) if record.ca_bundle else None
    network: RunNetwork | None = None
    try:
        if backend_name != "docker":
            ca_path = str(ca_file.path) if ca_file else None
            wired = account_run_profile(profile, record, ca_path=ca_path)
            host_env = account_host_env(wired, credential, os.environ)
            backend = make_backend(
                backend_name, run_id=run_id, host_env=host_env, secret_files=files
            )
            return RunEnvironment(backend, wired, account=stamp, ca_file=ca_file)
        from pairlab.adapters.accounts.provider_route import provider_route
        from pairlab.adapters.backends.run_network import open_run_network
        from pairlab.adapters.docker_engine import connect
        from pairlab.adapters.run.provider import ensure_client_image

        route = provider_route(record.effective_provider_url)
        wired = account_run_profile(
            profile,
            record,
            provider_url=route.container_url,
            ca_path=PROVIDER_CA_MOUNT if ca_file else None,
        )
        wired = wired.model_copy(update={"image": ensure_client_image(profile)})
        host_env = account_host_env(wired, credential, os.environ)
        network = open_run_network(connect(), run_id, [route.service], image=wired.image)
        backend = make_backend(
            "docker",
            run_id=run_id,
            host_env=host_env,
            run_network=network,
            secret_files=files,
            read_only_files={PROVIDER_CA_MOUNT: ca_file.path} if ca_file else None,
        )
    except BaseException:
        if network is not None:
            network.close()
        if ca_file is not None:
            ca_file.close()
        raise
    return RunEnvironment(backend, wired, account=stamp, network=network, ca_file=ca_file)


Prepare = Callable[[ExecutionBackend, EpisodeSpec], PreparedEpisode]
Cleanup = Callable[[ExecutionBackend, PreparedEpisode], None]


def _prepare(backend: ExecutionBackend, spec: EpisodeSpec) -> PreparedEpisode:
    return backend.prepare(spec)


def _cleanup(backend: ExecutionBackend, prepared: PreparedEpisode) -> None:
    backend.cleanup(prepared)


@contextmanager
def prepared(
    backend: ExecutionBackend,
    spec: EpisodeSpec,
    *,
    prepare: Prepare = _prepare,
    cleanup: Cleanup = _cleanup,
) -> Iterator[PreparedEpisode]:
    """Prepare the episode, yield it, and clean it up even when the body raised.

    ``prepare``/``cleanup`` default to the backend's own; the flows pass their Prefect
    tasks (retried infrastructure steps, tasks/episode.py)."""
    episode = prepare(backend, spec)
    try:
        yield episode
    finally:
        cleanup(backend, episode)


def run_and_collect(
    backend: ExecutionBackend, spec: EpisodeSpec, dest: Path
) -> tuple[PreparedEpisode, RunOutcome, CollectedFiles]:
    """Prepare, run, copy the files out into ``dest``, clean up (the probes' lifecycle)."""
    with prepared(backend, spec) as episode:
        outcome = backend.run(episode)
        files = backend.collect(episode, dest)
    return episode, outcome, files


@dataclass(frozen=True)
class CollectedEpisode:
    files: CollectedFiles
    usage: EpisodeUsage
    ledger: dict[str, int | None] | None
    checks: list[GraderCheck]
    evidence: EpisodeEvidence | None = None  # the intervention's finding evidence and join
    final_answer: str | None = None
    ledger_error: str | None = None  # soft_ledger: why the ledger could not be read

    @property
    def delivered_tokens(self) -> int | None:
        """Tokens the optimizer delivered, per the episode's MCP ledger (None when none)."""
        value = self.ledger.get("observed_returned_tokens") if self.ledger else None
        return value if isinstance(value, int) else None


def collect_episode(
    backend: ExecutionBackend,
    episode: PreparedEpisode,
    profile: RunnerProfile,
    task_entry: TaskEntry,
    outcome: RunOutcome,
    episode_dir: Path,
    *,
    soft_ledger: bool = False,
) -> CollectedEpisode:
    """Copy the episode's files into ``<episode_dir>/collected``, read its
    provider-native usage, ingest its MCP ledger rows into ``<episode_dir>/ledger.db``,
    grade its workspace and final answer, read the intervention's finding evidence.

    Every step is idempotent (collection overwrites, ledger rows are keyed, grading
    reads), so the whole step may be retried on an infrastructure error. A ledger
    that cannot be read raises, unless ``soft_ledger``: then its measurement stays None
    (never 0) and the reason is kept in ``ledger_error``."""
    from pairlab.adapters.episode.finding_evidence import read_episode_evidence
    from pairlab.adapters.episode.grading import grade

    files = backend.collect(episode, episode_dir / "collected")
    usage = read_episode_usage(profile, files)
    ledger, ledger_error = None, None
    try:
        ledger = ingest_ledger(files, episode_dir)
    except PairlabError as exc:
        if not soft_ledger:
            raise
        ledger_error = exc.message
    delivered = ledger.get("observed_returned_tokens") if ledger else None
    final_answer = extract_final_answer(outcome.stdout, profile.client)
    checks = grade(backend, episode, task_entry, final_answer, delivered)
    evidence = read_episode_evidence(files, usage_files(profile, files))
    return CollectedEpisode(
        files=files,
        usage=usage,
        ledger=ledger,
        checks=checks,
        evidence=evidence,
        final_answer=final_answer,
        ledger_error=ledger_error,
    )


__all__ = [
    "CollectedEpisode",
    "RunEnvironment",
    "collect_episode",
    "open_run_environment",
    "prepared",
    "run_and_collect",
]
