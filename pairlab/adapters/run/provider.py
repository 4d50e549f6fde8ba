"""The provider emulator of one run, for profiles with ``endpoint: emulator``.

A run (``pairlab eval``, ``pairlab episode run``, ``pairlab certify``) opens one
:class:`RunEndpoint`: it starts the emulator in this process (``ProviderEmulator``,
127.0.0.1, a free port; ledgers in a directory of the run), and on the Docker backend
opens the run's network so episode containers reach the emulator -- and nothing else --
as ``http://emulator:8080`` (``run_network``), building the profile's client image on
first use. The backend the run must use comes with it (:attr:`RunEndpoint.backend`).

Per episode, :meth:`RunEndpoint.register` registers the episode (task, arm, seed, the
run's account, the episode's faults) under a fresh token and returns its base URL as
the agent reaches it (``EpisodeSpec.endpoint_url``, the profile's ``{emulatorUrl}``).

What the run hands the CLI: for each secret the profile declares, the emulator's own
dummy credential (never the host's: a run against the emulator must not send a real
key anywhere) -- an OAuth-style token for Claude Code, so it reads the unified
rate-limit headers. :attr:`RunEndpoint.profile` is the profile with its quota probe
pointed at the emulator's usage endpoint for the run's account and its charge log
(``quota.charge_log_url``): quota snapshots come from the surface the real CLI reads,
and concurrent use of the account is the emulator's ground truth.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets as random_tokens
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from pairlab.adapters.backends.base import ExecutionBackend
from pairlab.adapters.backends.factory import make_backend
from pairlab.adapters.clients.registry import REAL_CLIS, resolve_cli
from pairlab.adapters.emulator import EpisodeRegistration, ProviderEmulator
from pairlab.adapters.emulator.server import (
    CLAUDE_API_KEY,
    CLAUDE_OAUTH_TOKEN,
    CODEX_KEY_ENV,
    EpisodeHandle,
)
from pairlab.adapters.paths import catalog_dir
from pairlab.core.emulator.request_ledger import HELD_FAULT_KINDS, ground_truth
from pairlab.core.emulator.run_settings import EmulatorSettings
from pairlab.core.errors import EnvironmentUnavailable, InvalidInputError, ReasonCode
from pairlab.core.schemas.profile import RunnerProfile
from pairlab.core.schemas.usage import UsageVector
from pairlab.core.stats.seeds import derive_seed

EMULATOR_ALIAS: Final = "emulator"
RUN_ACCOUNT: Final = "run"
# the emulator's dummy credential for each secret variable a profile may declare
DUMMY_CREDENTIALS: Final = {
    "CLAUDE_CODE_OAUTH_TOKEN": CLAUDE_OAUTH_TOKEN,
    "ANTHROPIC_API_KEY": CLAUDE_API_KEY,
    CODEX_KEY_ENV: "pairlab-emulator",
}
PROBE_TOKEN: Final = "pairlab-emulator"
_USAGE_PATHS: Final = {
    "claude-oauth-usage": "/api/oauth/usage",
    "codex-usage-endpoint": "/backend-api/wham/usage",
}


@dataclass(frozen=True)
class EpisodeEndpoint:
    """One registered episode: where its CLI points and where its ground truth goes."""

    handle: EpisodeHandle
    url: str  # the base URL as the agent reaches it (EpisodeSpec.endpoint_url)

    @property
    def ledger_path(self) -> Path:
        return self.handle.ledger_path


@dataclass(frozen=True)
class GroundTruthCheck:
    """One episode's usage three ways: the emulator's ledger (ground truth), pairlab's
    reader on the CLI's files, and the CLI's own account on stdout (Claude's result
    usage, Codex's ``turn.completed``)."""

    token: str
    truth: UsageVector
    reader: UsageVector | None
    cli: UsageVector | None
    requests: int
    billed: int
    faults: list[str]

    @property
    def agrees(self) -> bool:
        """Both accounts equal the truth. With nothing billed (every request refused) the
        truth is empty: the reader then finds no usage and the CLI may state zeros."""
        if self.billed == 0:
            cli_zero = self.cli is None or all(
                v in (None, 0) for v in self.cli.model_dump().values()
            )
            return (self.reader is None or self.reader.is_empty()) and cli_zero
        return self.reader == self.truth and self.cli == self.truth

    def to_json(self) -> dict[str, Any]:
        def vec(v: UsageVector | None) -> dict[str, Any] | None:
            return v.model_dump(mode="json") if v is not None else None

        return {
            "token": self.token,
            "agrees": self.agrees,
            "truth": vec(self.truth),
            "reader": vec(self.reader),
            "cli": vec(self.cli),
            "requests": self.requests,
            "billed": self.billed,
            "faults": self.faults,
        }


def cli_own_usage(client: str, stdout: str) -> UsageVector | None:
    """The usage a real CLI states on its own stdout (None for any other client)."""
    cli = REAL_CLIS.get(client)
    return cli.own_usage(stdout) if cli is not None else None


def _host_env(profile: RunnerProfile, host_env: Mapping[str, str]) -> dict[str, str]:
    """The host environment with the profile's secrets replaced by dummy credentials."""
    env = {k: v for k, v in host_env.items() if k not in profile.secrets}
    env.update({k: DUMMY_CREDENTIALS[k] for k in profile.secrets if k in DUMMY_CREDENTIALS})
    return env


def _wired_profile(profile: RunnerProfile, emulator_url: str) -> RunnerProfile:
    """The profile with its quota probe and charge log on the emulator's run account."""
    account = f"{emulator_url}/a/{RUN_ACCOUNT}"
    options = dict(profile.quota.options)
    path = _USAGE_PATHS.get(profile.quota.probe)
    if path is not None:
        options.update({"url": account + path, "token": PROBE_TOKEN})
    quota = profile.quota.model_copy(
        update={
            "options": options,
            "charge_log_url": f"{emulator_url}/admin/accounts/{RUN_ACCOUNT}/charges",
        }
    )
    return profile.model_copy(update={"quota": quota})


class RunEndpoint:
    """An open run endpoint; use as a context manager or call :meth:`close`."""

    def __init__(
        self,
        profile: RunnerProfile,
        emulator: ProviderEmulator,
        backend: ExecutionBackend,
        settings: EmulatorSettings,
        network: Any = None,
    ) -> None:
        self.emulator = emulator
        self.backend = backend
        self.settings = settings
        self.network = network
        self.profile = _wired_profile(profile, emulator.url)

    @property
    def ledger_dir(self) -> Path:
        return self.emulator.service.ledger_dir

    def agent_server_url(self) -> str:
        """The emulator's address as an episode reaches it."""
        if self.network is not None:
            return str(self.network.url(EMULATOR_ALIAS))
        return self.emulator.url

    def register(
        self,
        *,
        episode_id: str,
        task_id: str,
        arm: str,
        repetition: int,
        seed: int,
        replanned: bool = False,
    ) -> EpisodeEndpoint:
        """Register one episode under a fresh token (an interrupted attempt's ledger is
        never appended to). A held fault (``HELD_FAULT_KINDS``: a limit that lasts) stands
        for a limit in force when the pair first ran; a pair a resume planned again after
        it (``replanned``) runs once the limit has lifted, so it does not get it again."""
        faults = [
            r.fault
            for r in self.settings.faults
            if r.selects(task_id, arm, repetition)
            and not (replanned and r.fault.kind in HELD_FAULT_KINDS)
        ]
        # a treated arm follows the intervention's usage recipe for the task (the baseline never)
        stamp = self.profile.intervention
        registration = EpisodeRegistration(
            task_id=task_id,
            arm=arm,
            seed=seed,
            account=RUN_ACCOUNT,
            faults=faults,
            wrong_probability=self.settings.wrong_probability,
            episode_id=episode_id,
            recipe=stamp.episode_recipe(task_id, arm) if stamp is not None else None,
        )
        token = f"ep-{derive_seed('pairlab.emulator.token', episode_id) % 16**12:012x}-{random_tokens.token_hex(3)}"
        handle = self.emulator.register_episode(registration, token)
        return EpisodeEndpoint(handle=handle, url=handle.base_url(self.agent_server_url()))

    def check_episode(
        self,
        registered: EpisodeEndpoint,
        episode_dir: Path,
        *,
        client: str,
        reader: UsageVector | None,
        stdout: str,
    ) -> GroundTruthCheck:
        """Compare the episode's usage with the ground truth; write ``emulator.json``
        (and a copy of the ledger) into ``episode_dir``."""
        rows = registered.handle.rows()
        check = GroundTruthCheck(
            token=registered.handle.token,
            truth=ground_truth(rows),
            reader=reader,
            cli=cli_own_usage(client, stdout),
            requests=len(rows),
            billed=sum(1 for r in rows if r.billed),
            faults=[r.fault for r in rows if r.fault],
        )
        episode_dir.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(registered.ledger_path, episode_dir / "emulator-ledger.jsonl")
        (episode_dir / "emulator.json").write_text(
            json.dumps(check.to_json(), indent=2) + "\n", encoding="utf-8"
        )
        return check

    def close(self) -> None:
        try:
            if self.network is not None:
                self.network.close()
        finally:
            self.network = None
            self.emulator.stop()

    def __enter__(self) -> RunEndpoint:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def ensure_client_image(profile: RunnerProfile) -> str:
    """The profile's client image, matching this code: built on first use, rebuilt when its
    inputs (the locked wheels, the intervention's sources, the Dockerfile) changed, else
    reused in about a second (the image registry, ``pairlab.adapters.images.build``). Returns the
    immutable input-hash tag the run uses (another checkout re-pointing the alias meanwhile
    changes nothing). When the inputs cannot be checked (no wheel cache and no network) an
    image already present is used as named, with a warning."""
    from pairlab.adapters.docker_engine import image_present
    from pairlab.adapters.images.build import ensure_image
    from pairlab.adapters.images.clients import CLIENT_IMAGES
    from pairlab.adapters.images.registry import local_tag, spec_for_tag

    image = CLIENT_IMAGES.get(profile.client)
    spec = spec_for_tag(profile.image)
    if spec is None:
        if image is not None and profile.image.startswith(f"{image.repository}:"):
            raise InvalidInputError(
                f"containers/images.yaml builds {image.repository} at another version than the "
                f"profile's {profile.image}: update the profile's image and version",
                reason=ReasonCode.INVALID_PROFILE,
            )
        if image_present(profile.image) is not None:
            return profile.image
        raise InvalidInputError(
            f"image {profile.image} is not present and pairlab does not know how to build it",
            reason=ReasonCode.NOT_FOUND,
        )
    try:
        return ensure_image(profile.image)
    except EnvironmentUnavailable as exc:
        present = local_tag(profile.image)
        if exc.reason == ReasonCode.DOCKER_UNAVAILABLE or image_present(present) is None:
            raise
        print(f"pairlab: using the present {present} unchecked ({exc.message})", file=sys.stderr)
        return present


def open_run_endpoint(
    profile: RunnerProfile,
    *,
    run_id: str,
    backend_name: str,
    ledger_dir: Path,
    settings: EmulatorSettings | None = None,
    host_env: Mapping[str, str] | None = None,
    clean_orphans: bool = True,
    credentials: Mapping[str, str] | None = None,
    secret_files: Mapping[str, str] | None = None,
) -> RunEndpoint:
    """Start the run's emulator (and, on Docker, its network) and the backend to use.

    ``credentials`` (secret variable -> value) replace the dummy credentials, and the
    emulator then requires exactly them (or the ``secret_files``' auth.json) as the
    stand-in provider does: ``pairlab certify --account`` runs its probe this way, the
    account's credential delivered in the CLI's own form."""
    from pairlab.adapters.emulator.auth_gate import AuthGate

    settings = settings or EmulatorSettings()
    if backend_name == "local" and profile.client in REAL_CLIS:
        resolve_cli(profile.client)  # the pinned wheel's binary, or exit 3 with the fix
    accepted = [*(credentials or {}).values(), *(secret_files or {}).values()]
    emulator = ProviderEmulator(
        ledger_dir,
        catalog_dir=catalog_dir(),
        accounts={RUN_ACCOUNT: settings.plan()},
        keep_requests=settings.keep_requests,
        auth=AuthGate.of(accepted) if accepted else None,
    ).start()
    emulator.service.open_account(RUN_ACCOUNT)  # an account in use: its windows are running
    env = _host_env(profile, os.environ if host_env is None else host_env)
    env.update(credentials or {})
    files = dict(secret_files or {})
    network = None
    try:
        if backend_name == "docker":
            from pairlab.adapters.backends.run_network import HostService, open_run_network
            from pairlab.adapters.docker_engine import connect

            profile = profile.model_copy(update={"image": ensure_client_image(profile)})
            network = open_run_network(
                connect(),
                run_id,
                [HostService(EMULATOR_ALIAS, emulator.bound_port)],
                image=profile.image,
            )
            backend = make_backend(
                "docker",
                run_id=run_id,
                host_env=env,
                run_network=network,
                clean_orphans=clean_orphans,
                secret_files=files,
            )
        else:
            backend = make_backend(
                backend_name,
                run_id=run_id,
                host_env=env,
                clean_orphans=clean_orphans,
                secret_files=files,
            )
    except BaseException:
        if network is not None:
            with contextlib.suppress(Exception):
                network.close()
        emulator.stop()
        raise
    return RunEndpoint(profile, emulator, backend, settings, network)


__all__ = [
    "DUMMY_CREDENTIALS",
    "EMULATOR_ALIAS",
    "RUN_ACCOUNT",
    "EpisodeEndpoint",
    "GroundTruthCheck",
    "RunEndpoint",
    "cli_own_usage",
    "ensure_client_image",
    "open_run_endpoint",
]
