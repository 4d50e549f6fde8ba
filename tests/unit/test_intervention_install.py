"""Installing a pypi intervention: the lock beside the manifest must exist and pin exactly
the manifest's requirement, fully hashed (refused with a reason code before anything is
installed); the environment is keyed by its inputs; a failed install is
``intervention-install-failed``; a treated local episode gets a directory holding only the
server's command first on PATH (not the environment's bin: its python3), the baseline
does not."""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from pairlab.adapters.backends.base import EpisodeSpec
from pairlab.adapters.backends.local import LocalBackend
from pairlab.adapters.images.intervention_images import DerivedImage, derived_for, dockerfile
from pairlab.adapters.intervention_install import (
    CACHE_ENV,
    MARKER,
    check_lock,
    ensure_installed,
    environment_dir,
    install_for_backend,
)
from pairlab.adapters.interventions import LoadedIntervention, load_intervention
from pairlab.adapters.profiles import load_named_profile
from pairlab.core.errors import ExecutionError, InvalidInputError, PairlabError, ReasonCode
from tests.support import CATALOG_DIR, REPO_ROOT

SHIPPED = REPO_ROOT / "interventions"
FAKE_SHA = "0" * 64


def _copy(tmp_path: Path, ident: str = "mcp-server-git", **install: object) -> Path:
    """The shipped manifest and its lock copied into ``tmp_path``, ``install`` overriding."""
    data = yaml.safe_load((SHIPPED / f"{ident}.yaml").read_text())
    (tmp_path / "locks").mkdir(exist_ok=True)
    shutil.copy(SHIPPED / "locks" / f"{ident}.txt", tmp_path / "locks" / f"{ident}.txt")
    data["install"] = {k: v for k, v in {**data["install"], **install}.items() if v is not None}
    path = tmp_path / f"{ident}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _reason(exc: pytest.ExceptionInfo[PairlabError]) -> ReasonCode:
    return exc.value.reason


@pytest.mark.parametrize("ident", ["mcp-server-git", "code-review-graph"])
def test_shipped_locks_pin_their_manifests(ident: str) -> None:
    loaded = load_intervention(ident)
    lock = SHIPPED / "locks" / f"{ident}.txt"
    check_lock(loaded, lock.read_text())  # no refusal
    assert environment_dir(loaded).name.startswith(f"{ident}-")


def test_missing_lock_is_refused(tmp_path: Path) -> None:
    no_lock = load_intervention(str(_copy(tmp_path, lock=None)))
    with pytest.raises(InvalidInputError) as exc:
        environment_dir(no_lock)
    assert _reason(exc) == ReasonCode.INTERVENTION_LOCK_MISSING
    gone = load_intervention(str(_copy(tmp_path, lock="locks/absent.txt")))
    with pytest.raises(InvalidInputError) as exc:
        environment_dir(gone)
    assert _reason(exc) == ReasonCode.INTERVENTION_LOCK_MISSING and "absent.txt" in str(exc.value)


def test_lock_pinning_another_version_or_hash_is_refused(tmp_path: Path) -> None:
    other_version = load_intervention(str(_copy(tmp_path, pypi="mcp-server-git==2025.1.1")))
    with pytest.raises(InvalidInputError) as exc:
        environment_dir(other_version)
    assert _reason(exc) == ReasonCode.INTERVENTION_LOCK_MISMATCH
    assert "2026.10.19" in str(exc.value)
    other_hash = load_intervention(str(_copy(tmp_path, sha256=FAKE_SHA)))
    with pytest.raises(InvalidInputError) as exc:
        environment_dir(other_hash)
    assert _reason(exc) == ReasonCode.INTERVENTION_LOCK_MISMATCH and FAKE_SHA in str(exc.value)


def test_unhashed_requirement_in_the_lock_is_refused(tmp_path: Path) -> None:
    loaded = load_intervention(str(_copy(tmp_path)))
    text = (tmp_path / "locks" / "mcp-server-git.txt").read_text() + "click==8.1.7\n"
    with pytest.raises(InvalidInputError) as exc:
        check_lock(loaded, text)
    assert _reason(exc) == ReasonCode.INTERVENTION_LOCK_MISMATCH and "click" in str(exc.value)


@pytest.mark.parametrize("lock", ["/etc/lock.txt", "../locks/x.txt"])
def test_lock_outside_the_manifest_directory_is_refused(tmp_path: Path, lock: str) -> None:
    with pytest.raises(InvalidInputError) as exc:
        load_intervention(str(_copy(tmp_path, lock=lock)))
    assert _reason(exc) == ReasonCode.INVALID_INTERVENTION and "install.lock" in str(exc.value)


def test_environment_key_follows_the_lock(tmp_path: Path) -> None:
    loaded = load_intervention(str(_copy(tmp_path)))
    before = environment_dir(loaded)
    lock = tmp_path / "locks" / "mcp-server-git.txt"
    lock.write_text(lock.read_text() + "# a comment changes the bytes\n")
    after = environment_dir(loaded)
    assert before != after and before.parent == after.parent


def test_install_failure_has_its_reason_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lock whose hash is not the real wheel's: uv refuses it (--require-hashes)."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    path = _copy(tmp_path, sha256=FAKE_SHA)
    lock = tmp_path / "locks" / "mcp-server-git.txt"
    text = lock.read_text().replace(
        "d4bfe88847089ed93d8e2dfc7ec97a23e5d067cfd165ee811e42675b614ab409", FAKE_SHA
    )
    text = text.replace(
        "386b8a6de78623d046c37779a20cdf7741669567fcaab28e717327eb7c190e27", FAKE_SHA
    )
    lock.write_text(text)
    loaded = load_intervention(str(path))
    with pytest.raises(ExecutionError) as exc:
        ensure_installed(loaded, log=lambda _m: None)
    assert _reason(exc) == ReasonCode.INTERVENTION_INSTALL_FAILED
    assert exc.value.exit_code == 1
    assert not (environment_dir(loaded) / ".pairlab-installed.json").exists()


@pytest.mark.parametrize("ident", ["mcp-server-git", "code-review-graph"])
def test_a_finished_install_without_its_path_dir_gets_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ident: str
) -> None:
    """An environment installed before ``path/`` existed (marker written, no ``path/``) is
    reused -- no uv on PATH here, so nothing is installed -- and gets ``path/`` holding only
    the manifest's command, a link into its bin: the agent's python3 is not on it."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv("PAIRLAB_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    loaded = load_intervention(ident)
    command = loaded.manifest.command
    assert "/" not in command  # each shipped pypi manifest names a file in its bin
    target = environment_dir(loaded)
    (target / "bin").mkdir(parents=True)
    for name in (command, "python3", "python", "pip"):
        (target / "bin" / name).write_text("#!/bin/sh\n")
    (target / MARKER).write_text("{}\n")
    logs: list[str] = []
    path_dir = ensure_installed(loaded, log=logs.append)
    assert path_dir == target / "path"
    assert [p.name for p in path_dir.iterdir()] == [command]
    assert (path_dir / command).resolve() == (target / "bin" / command).resolve()
    assert shutil.which("python3", path=str(path_dir)) is None
    assert not any(m.startswith("installing") for m in logs)
    assert ensure_installed(loaded, log=logs.append) == path_dir  # reused as it is


def test_a_command_that_is_not_a_file_name_is_refused(tmp_path: Path) -> None:
    loaded = load_intervention("mcp-server-git")
    for command in ("bin/mcp-server-git", "/usr/bin/git", "git; rm -rf /"):
        bad = replace(loaded, manifest=loaded.manifest.model_copy(update={"command": command}))
        with pytest.raises(ExecutionError) as exc:
            ensure_installed(bad, log=lambda _m: None)
        assert _reason(exc) == ReasonCode.INTERVENTION_INSTALL_FAILED


def test_docker_needs_a_client_image_and_other_backends_are_refused() -> None:
    """On Docker a pypi intervention goes into an image derived from a registry client
    image (tests/e2e/test_intervention_docker_image.py builds one); a profile naming any
    other image, or a backend that is neither, is refused before anything is built."""
    loaded = load_intervention("mcp-server-git")
    profile = load_named_profile("claude", intervention=loaded)
    other = profile.model_copy(update={"image": "example/other:1"})
    with pytest.raises(ExecutionError) as exc:
        install_for_backend(other, loaded, "docker")
    assert _reason(exc) == ReasonCode.INTERVENTION_INSTALL_FAILED
    assert "example/other:1" in str(exc.value)
    with pytest.raises(ExecutionError) as exc:
        install_for_backend(profile, loaded, "k8s")
    assert _reason(exc) == ReasonCode.INTERVENTION_INSTALL_FAILED
    reference = load_intervention("reference")
    plain = load_named_profile("claude", intervention=reference)
    assert install_for_backend(plain, reference, "docker") is plain  # a module: nothing to do


def test_the_derived_dockerfile_carries_the_manifests_values() -> None:
    loaded = load_intervention("mcp-server-git")
    derived = derived_for("pairlab/claude:2.1.332", loaded)
    assert derived.tag.endswith("intervention-mcp-server-git:claude-2.1.332")
    text = dockerfile(derived, "0123456789abcdef")
    assert not re.search(r"@(INTERVENTION_ID|COMMAND|UV_VERSION|DEBIAN|LABELS)@", text)
    assert "apt-get install -y -q --no-install-recommends git;" in text
    assert 'target="/opt/interventions/mcp-server-git"' in text and "bin/mcp-server-git" in text
    assert 'pairlab.inputs="0123456789abcdef"' in text
    # the input hash follows the lock and the client image
    assert derived.input_hash("sha256:a") != derived.input_hash("sha256:b")
    bad = loaded.manifest.model_copy(update={"command": "git; rm -rf /"})
    with pytest.raises(ExecutionError):
        dockerfile(DerivedImage("claude", "2.1.332", replace(loaded, manifest=bad)), "x")


def _prepared_path(
    backend: LocalBackend, loaded: LoadedIntervention, arm: str, bin_dir: str
) -> str:
    profile = load_named_profile("claude", intervention=loaded)
    treatment = profile.treatment.model_copy(update={"path_prepend": [bin_dir]})
    spec = EpisodeSpec(
        run_id="r",
        episode_id=f"r:fix-median:0:{arm}",
        pair_id="r:fix-median:0",
        task_id="fix-median",
        arm=arm,
        prompt="p",
        profile=profile.model_copy(update={"treatment": treatment}),
        fixture_dir=CATALOG_DIR / "fixtures" / "median-stats",
        timeout_s=10,
        endpoint_url="http://127.0.0.1:9/e/x",
    )
    prepared = backend.prepare(spec)
    try:
        return prepared.env["PATH"]
    finally:
        backend.cleanup(prepared)


def test_treated_local_episode_gets_the_command_dir_first(tmp_path: Path) -> None:
    backend = LocalBackend(base_dir=tmp_path, host_env={"PATH": "/usr/bin:/bin"})
    loaded = load_intervention("mcp-server-git")
    path_dir = str(tmp_path / "env" / "path")
    assert _prepared_path(backend, loaded, "optimizer", path_dir).split(":")[0] == path_dir
    assert path_dir not in _prepared_path(backend, loaded, "baseline", path_dir).split(":")
