"""The image registry (containers/images.yaml): what it lists agrees with the code that
names images, and the input hash follows the inputs (pairlab.adapters.images.registry,
build_inputs)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from pairlab_simclient import __version__ as SIMCLIENT_VERSION

from pairlab.adapters.images import registry as images
from pairlab.adapters.images.build_inputs import context_files, input_hash
from pairlab.adapters.images.clients import CLIENT_IMAGES
from pairlab.adapters.paths import REPO_ROOT
from pairlab.adapters.store.garage import GARAGE_VERSION
from pairlab.core.errors import InvalidInputError


def test_every_image_is_listed_once_and_built_after_its_base() -> None:
    registry = images.load_registry()
    assert list(registry) == [
        "base",
        "simclient",
        "claude",
        "codex",
        "worker",
        "postgres",
        "garage",
    ]
    order = list(registry)
    for spec in registry.values():
        if spec.base is not None:
            assert order.index(spec.base) < order.index(spec.name)
        if spec.build == "dockerfile":
            assert spec.dockerfile is not None and (REPO_ROOT / spec.dockerfile).is_file()


def test_registry_tags_match_profiles_compose_and_versions() -> None:
    registry = images.load_registry()
    assert registry["simclient"].tag == f"pairlab/simclient:{SIMCLIENT_VERSION}"
    assert registry["garage"].tag == f"pairlab/garage:{GARAGE_VERSION}"
    for name, client in CLIENT_IMAGES.items():
        assert registry[name].tag.startswith(client.repository + ":")
    profile_images = {
        yaml.safe_load(p.read_text())["image"]
        for p in (REPO_ROOT / "runner_profiles").glob("*.yaml")
    }
    for name in ("simclient", "claude", "codex"):
        assert registry[name].tag in profile_images
    text = (REPO_ROOT / "infra" / "compose.yaml").read_text()
    compose = yaml.safe_load(text.replace("${PAIRLAB_IMAGE_PREFIX:-pairlab/}", "pairlab/"))
    used = {s["image"] for s in compose["services"].values() if "image" in s}
    assert {"pairlab/postgres:15", "pairlab/garage:2.5.0", "pairlab/worker:latest"} <= used
    tags = {spec.tag for spec in registry.values()}
    assert used <= tags, f"compose names images the registry does not build: {used - tags}"


def test_input_hash_follows_inputs(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(
        REPO_ROOT / "containers" / "simclient",
        repo / "containers" / "simclient",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    spec = images.load_registry()["simclient"]
    first = input_hash(spec, "sha256:base1", repo)
    assert input_hash(spec, "sha256:base1", repo) == first
    assert input_hash(spec, "sha256:base2", repo) != first  # a new base rebuilds
    init = repo / "containers" / "simclient" / "pairlab_simclient" / "__init__.py"
    init.write_text(init.read_text() + "\n# changed\n")
    assert input_hash(spec, "sha256:base1", repo) != first
    paths = [rel for rel, _ in context_files(spec, repo)]
    assert "pairlab_simclient/__init__.py" in paths  # relative to the context root


def test_prefix_renames_only_pairlab_tags(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(images.PREFIX_ENV, "pairlabtest-1/")
    assert images.local_tag("pairlab/simclient:1.0.0") == "pairlabtest-1/simclient:1.0.0"
    assert images.local_tag("python:3.11-slim") == "python:3.11-slim"
    spec = images.spec_for_tag("pairlab/simclient:1.0.0")
    assert spec is not None and spec.name == "simclient"
    assert images.spec_for_tag("pairlabtest-1/claude:2.1.332-abc") is not None
    for bad in ("Upper/", "no-slash", "a/b/"):
        monkeypatch.setenv(images.PREFIX_ENV, bad)
        with pytest.raises(InvalidInputError):
            images.image_prefix()
