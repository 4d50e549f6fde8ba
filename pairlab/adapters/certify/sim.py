"""``pairlab certify``: check every runner profile without a model (DESIGN 8).

Per profile: the schema (a profile without baseline arm args or a documented
baseline isolation is refused, naming the field); the image exists (Docker) or
the command resolves (local), or -- for a CLI that cannot run here -- its
Dockerfile is buildable in principle; the CLI's reported version (recorded, and
compared with the profile's pin); and the isolation probe. The probe plants a
hook, MCP servers and rule files in a stand-in for the host user's HOME, whose
variables the backend is given as the host environment, then runs one episode
per arm: the baseline must see nothing at all, each treated arm exactly the
profile's home seed. Profiles whose CLI cannot run here are
``not-live-certified``, never ``passed``. Deterministic configuration checks are
never evidence about the intervention (DESIGN 7).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from pairlab.adapters.backends.base import BASELINE_ARM, EpisodeSpec, ExecutionBackend
from pairlab.adapters.backends.factory import make_backend
from pairlab.adapters.certify.account_path import CertifyAccount
from pairlab.adapters.certify.live import certify_live
from pairlab.adapters.certify.report import (
    BackendFactory,
    CertifyCheck,
    CertifyReport,
    ProfileCertification,
)
from pairlab.adapters.certify.sim_probe import (
    SeenConfig,
    config_in_home,
    host_env_for,
    parse_found_line,
    parse_truth_seen,
    plant_host_config,
)
from pairlab.adapters.episode.session import run_and_collect
from pairlab.adapters.interventions import LoadedIntervention
from pairlab.adapters.paths import REPO_ROOT
from pairlab.adapters.profiles import scan_profiles
from pairlab.core.errors import InvalidInputError, PairlabError, ReasonCode
from pairlab.core.schemas.profile import RunnerProfile

SIMCLIENT_PROBE = "simclient-found-line"
PROBE_TIMEOUT_S = 60.0
_VERSION = re.compile(r"\d+\.\d+(?:\.\d+)?(?:[-+.][0-9A-Za-z.]+)?")


def default_backend_factory(name: str) -> BackendFactory:
    """A backend whose "host" environment is the given one (the probe's planted HOME)."""

    def build(host_env: dict[str, str]) -> ExecutionBackend:
        return make_backend(name, host_env=host_env, clean_orphans=False)

    return build


class _Probe:
    """Runs probe episodes of one profile on one backend, in a scratch directory."""

    def __init__(self, name: str, profile: RunnerProfile, backend: ExecutionBackend, scratch: Path):
        self.name, self.profile, self.backend, self.scratch = name, profile, backend, scratch
        self.fixture = scratch / "fixture"
        self.fixture.mkdir(exist_ok=True)
        (self.fixture / "README.md").write_text("pairlab isolation probe workspace\n")
        self.count = 0

    def episode(self, arm: str, profile: RunnerProfile | None = None) -> tuple[str, Path]:
        """Run one episode; returns (stdout + stderr, collected dir)."""
        self.count += 1
        run_id = f"certify-{self.name}"
        pair_id = f"{run_id}:isolation-probe:{self.count}"
        spec = EpisodeSpec(
            run_id=run_id,
            episode_id=f"{pair_id}:{arm}",
            pair_id=pair_id,
            task_id="isolation-probe",
            arm=arm,
            prompt="pairlab certify: isolation probe. Report what configuration you loaded.",
            profile=profile or self.profile,
            fixture_dir=self.fixture,
            timeout_s=min(self.profile.timeout_s, PROBE_TIMEOUT_S),
            sim_account_dir=self.scratch / "account" if self.profile.quota.probe == "sim" else None,
        )
        dest = self.scratch / f"collected-{self.count}"
        _, outcome, _ = run_and_collect(self.backend, spec, dest)
        if outcome.error is not None:
            raise _ProbeFailed(f"{arm} episode did not start: {outcome.error}")
        if outcome.timed_out:
            raise _ProbeFailed(f"{arm} episode timed out")
        return outcome.stdout + "\n" + outcome.stderr, dest


class _ProbeFailed(Exception):
    pass


def _check_schema(profile_file_error: PairlabError | None) -> CertifyCheck:
    if profile_file_error is not None:
        return CertifyCheck(
            name="schema",
            passed=False,
            detail=f"[{profile_file_error.reason}] {profile_file_error.message}",
        )
    return CertifyCheck(
        name="schema", passed=True, detail="valid; baseline arm args and isolation present"
    )


def _check_quota_probe(profile: RunnerProfile) -> CertifyCheck:
    from pairlab.adapters.quota import PROBES

    name = profile.quota.probe
    if name not in PROBES:
        return CertifyCheck(
            name="quota-probe",
            passed=False,
            detail=f"unknown quota probe {name!r} (known: {', '.join(PROBES)})",
        )
    return CertifyCheck(name="quota-probe", passed=True, detail=name)


def _check_buildable(profile: RunnerProfile) -> CertifyCheck:
    if profile.dockerfile is None:
        return CertifyCheck(
            name="image", passed=False, detail=f"image {profile.image}: no dockerfile declared"
        )
    path = REPO_ROOT / profile.dockerfile
    if not path.is_file():
        return CertifyCheck(name="image", passed=False, detail=f"dockerfile {path} not found")
    if "ARG BASE_IMAGE" not in path.read_text(encoding="utf-8"):
        return CertifyCheck(
            name="image", passed=False, detail=f"{profile.dockerfile} does not take ARG BASE_IMAGE"
        )
    return CertifyCheck(
        name="image",
        passed=True,
        detail=f"{profile.dockerfile} present (builds {profile.image}; not built here)",
    )


def _check_runnable(profile: RunnerProfile, backend_name: str) -> CertifyCheck:
    if backend_name == "docker":
        from pairlab.adapters.docker_engine import image_present
        from pairlab.adapters.images.registry import local_tag

        image_id = image_present(local_tag(profile.image))  # as built: PAIRLAB_IMAGE_PREFIX
        if image_id is None:
            return CertifyCheck(
                name="image",
                passed=False,
                detail=f"image {profile.image} not present; build it with `pairlab images build`",
            )
        return CertifyCheck(
            name="image", passed=True, detail=f"{profile.image} present ({image_id[:19]})"
        )
    from pairlab.adapters.backends.local import agent_path

    found = shutil.which(profile.command[0], path=agent_path(os.environ.get("PATH")))
    if found is None:
        return CertifyCheck(
            name="command", passed=False, detail=f"{profile.command[0]!r} not found on PATH"
        )
    return CertifyCheck(name="command", passed=True, detail=f"{profile.command[0]} -> {found}")


def _check_version(probe: _Probe) -> tuple[CertifyCheck, str | None]:
    profile = probe.profile
    if not profile.version_command:
        return CertifyCheck(
            name="version", passed=False, detail="no version_command in the profile"
        ), None
    # the version command as a baseline episode: argv = command + baseline arm args
    head, *rest = profile.version_command
    version_profile = profile.model_copy(
        update={"command": [head], "arm_args": {BASELINE_ARM: rest or ["--version"]}, "args": []}
    )
    output, _ = probe.episode(BASELINE_ARM, version_profile)
    match = _VERSION.search(output)
    if match is None:
        return CertifyCheck(
            name="version", passed=False, detail=f"no version in output {output.strip()[:200]!r}"
        ), None
    version = match.group(0)
    if profile.version is not None and version != profile.version:
        return (
            CertifyCheck(
                name="version",
                passed=False,
                detail=f"CLI reports {version}, profile pins {profile.version}",
            ),
            version,
        )
    return CertifyCheck(name="version", passed=True, detail=f"reports {version}"), version


def _observe(output: str, collected: Path) -> SeenConfig:
    line = parse_found_line(output)
    if line is None:
        raise _ProbeFailed("the client printed no 'simclient: found ...' startup line")
    truth = parse_truth_seen(collected / "state" / "simclient-truth.json")
    if truth is not None and truth != line:
        raise _ProbeFailed(
            f"startup line ({line.describe()}) and truth file ({truth.describe()}) disagree"
        )
    return line


def _check_isolation(probe: _Probe) -> list[CertifyCheck]:
    profile = probe.profile
    if profile.baseline_isolation.probe != SIMCLIENT_PROBE:
        return [
            CertifyCheck(
                name="isolation",
                passed=False,
                detail=f"no probe implementation for '{profile.baseline_isolation.probe}' on this machine",
            )
        ]
    checks: list[CertifyCheck] = []
    seed = Path(profile.treatment.home_seed) if profile.treatment.home_seed else None
    expected_treated = config_in_home(seed)
    for arm in profile.arm_args:
        name = f"isolation-{arm}"
        try:
            output, collected = probe.episode(arm)
            seen = _observe(output, collected)
        except (_ProbeFailed, PairlabError) as exc:
            checks.append(
                CertifyCheck(name=name, passed=False, detail=f"probe could not observe: {exc}")
            )
            continue
        expected = SeenConfig() if arm == BASELINE_ARM else expected_treated
        extra, missing = seen.difference(expected)
        if not extra and not missing:
            what = (
                "nothing (fresh HOME)"
                if arm == BASELINE_ARM
                else f"exactly the treatment: {seen.describe()}"
            )
            checks.append(CertifyCheck(name=name, passed=True, detail=f"saw {what}"))
        else:
            checks.append(
                CertifyCheck(
                    name=name,
                    passed=False,
                    detail=f"isolation broken: saw unexpected {extra or 'nothing'}; missing {missing or 'nothing'}",
                )
            )
    return checks


def certify_profile(
    name: str,
    profile: RunnerProfile,
    backend_name: str,
    factory: BackendFactory,
    host_home: Path | None = None,
    intervention: LoadedIntervention | None = None,
    account: CertifyAccount | None = None,
) -> ProfileCertification:
    checks = [_check_schema(None), _check_quota_probe(profile)]
    version: str | None = None
    if profile.certification.level == "live-local":
        return certify_live(
            name, profile, backend_name, factory, checks, host_home, intervention, account
        )
    if profile.certification.level == "unavailable":
        checks.append(
            CertifyCheck(
                name="availability",
                passed=True,
                detail=f"not certified here: {profile.certification.reason}",
            )
        )
        checks.append(_check_buildable(profile))
        failed = any(not c.passed for c in checks)
        return ProfileCertification(
            client=profile.client,
            profile=name,
            status="failed" if failed else "not-live-certified",
            checks=checks,
            version=profile.version,
        )
    checks.append(_check_runnable(profile, backend_name))
    if checks[-1].passed:
        with tempfile.TemporaryDirectory(prefix="pairlab-certify-") as tmp:
            scratch = Path(tmp)
            home = host_home or scratch / "host-home"
            home.mkdir(parents=True, exist_ok=True)
            plant_host_config(home)
            try:
                backend = factory({**os.environ, **host_env_for(home)})
                probe = _Probe(name, profile, backend, scratch)
                version_check, version = _check_version(probe)
                checks.append(version_check)
                checks.extend(_check_isolation(probe))
            except (_ProbeFailed, PairlabError) as exc:
                checks.append(CertifyCheck(name="probe", passed=False, detail=str(exc)))
    failed = any(not c.passed for c in checks)
    return ProfileCertification(
        client=profile.client,
        profile=name,
        status="failed" if failed else "passed",
        checks=checks,
        version=version,
    )


def certify_profiles(
    *,
    backend_name: str = "local",
    only: str | None = None,
    directory: Path | None = None,
    factory: BackendFactory | None = None,
    host_home: Path | None = None,
    intervention: LoadedIntervention | None = None,
    account: CertifyAccount | None = None,
) -> CertifyReport:
    """Certify every profile (``only``: one), each with ``intervention`` (default: the
    reference) wired into its treated arms; with ``account``, only ``only``'s profile, on
    the account path (``account_path``)."""
    build = factory or default_backend_factory(backend_name)
    results: list[ProfileCertification] = []
    files = scan_profiles(directory, intervention)
    if only is not None:
        files = [f for f in files if f.name == only]
        if not files:
            known = ", ".join(f.name for f in scan_profiles(directory))
            raise InvalidInputError(
                f"unknown runner profile '{only}' (known: {known})",
                reason=ReasonCode.UNKNOWN_PROFILE,
            )
    for entry in files:
        if entry.profile is None:
            results.append(
                ProfileCertification(
                    client=entry.name,
                    profile=entry.name,
                    status="failed",
                    checks=[_check_schema(entry.error)],
                    version=None,
                )
            )
            continue
        result = certify_profile(
            entry.name, entry.profile, backend_name, build, host_home, intervention, account
        )
        results.append(result.model_copy(update={"level": entry.profile.certification.level}))
    return CertifyReport(profiles=results, passed=all(r.status != "failed" for r in results))
