"""The intervention manifest: a strict, versioned model; bad manifests are refused with a
reason code (exit 2) before anything runs; the hash follows meaning, not formatting."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from pairlab.adapters.interventions import load_intervention, shipped_intervention_ids
from pairlab.core.errors import InvalidInputError, ReasonCode
from pairlab.core.schemas.intervention_manifest import (
    ArmWiring,
    load_manifest,
    manifest_sha256,
    parse_manifest,
)
from pairlab.intervention import SERVER_NAME, SERVER_VERSION
from pairlab.intervention.settings import PASSED_ENV
from tests.support import REPO_ROOT

SHA = "a" * 64
VALID: dict[str, Any] = {
    "schema_version": 1,
    "id": "example-server",
    "version": "0.4.2",
    "description": "an example code-search server",
    "kind": "stdio",
    "install": {"pypi": "example-mcp==0.4.2", "sha256": SHA},
    "command": "example-mcp",
    "args": ["--stdio"],
    "env": {"EXAMPLE_MODE": "fast"},
    "env_vars": ["EXAMPLE_MODE", "PAIRLAB_WORKSPACE"],
    "arms": {"optimizer": {"args": ["--compact"]}, "retrieval": "unsupported", "full": {}},
    "startup_timeout_s": 20,
}


def refuse(mutate: Any) -> InvalidInputError:
    data = copy.deepcopy(VALID)
    mutate(data)
    with pytest.raises(InvalidInputError) as info:
        parse_manifest(data, "example-server.yaml")
    assert info.value.exit_code == 2
    assert info.value.message.startswith("example-server.yaml: intervention refused: field '")
    return info.value


def test_a_valid_manifest_loads_with_its_supported_arms() -> None:
    manifest = parse_manifest(copy.deepcopy(VALID))
    assert manifest.supported_arms == ("optimizer", "full")
    assert manifest.arm_wiring("retrieval") is None
    assert manifest.arm_wiring("baseline") is None
    assert manifest.arm_wiring("optimizer") == ArmWiring(args=["--compact"])
    assert manifest.mcp_name == "example-server"  # no server_name: the id
    assert manifest.install.package == "example-mcp"


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d.__setitem__("transport", "stdio"), "transport"),
        (lambda d: d["install"].__setitem__("index_url", "http://x"), "install.index_url"),
        (lambda d: d["arms"].__setitem__("optimizer", {"flags": []}), "arms.optimizer"),
    ],
)
def test_unknown_fields_are_refused(mutate: Any, field: str) -> None:
    error = refuse(mutate)
    assert error.reason == ReasonCode.INTERVENTION_UNKNOWN_FIELD
    assert f"field '{field}" in error.message


@pytest.mark.parametrize(
    "mutate", [lambda d: d.pop("command"), lambda d: d.__setitem__("command", "")]
)
def test_a_manifest_without_a_command_is_refused(mutate: Any) -> None:
    error = refuse(mutate)
    assert error.reason == ReasonCode.INTERVENTION_MISSING_COMMAND
    assert "field 'command'" in error.message


@pytest.mark.parametrize(
    "install",
    [
        {"pypi": "example-mcp", "sha256": SHA},
        {"pypi": "example-mcp>=0.4", "sha256": SHA},
        {"pypi": "example-mcp==0.4.*", "sha256": SHA},
        {"pypi": "example-mcp==0.4.2"},
        {"pypi": "example-mcp==0.4.2", "sha256": "not-a-hash"},
        {"pypi": "git+https://example.org/example-mcp", "sha256": SHA},
    ],
)
def test_an_unpinned_requirement_is_refused(install: dict[str, str]) -> None:
    error = refuse(lambda d: d.__setitem__("install", install))
    assert error.reason == ReasonCode.INTERVENTION_UNPINNED
    assert "field 'install'" in error.message


def test_the_most_specific_reason_wins_when_several_fields_are_wrong() -> None:
    def several(d: dict[str, Any]) -> None:
        d.pop("command")
        d["install"] = {"pypi": "example-mcp"}
        d["extra"] = 1

    assert refuse(several).reason == ReasonCode.INTERVENTION_UNKNOWN_FIELD


@pytest.mark.parametrize(
    ("mutate", "words"),
    [
        (lambda d: d["arms"].pop("full"), "missing: full"),
        (
            lambda d: d.__setitem__("arms", dict.fromkeys(VALID["arms"], "unsupported")),
            "unsupported",
        ),
        (lambda d: d["env_vars"].remove("EXAMPLE_MODE"), "EXAMPLE_MODE not in env_vars"),
        (lambda d: d["arms"].__setitem__("full", {"env": {"X": "1"}}), "X not in env_vars"),
        (lambda d: d.__setitem__("kind", "streamable-http"), "url"),
        (lambda d: d.__setitem__("url", "http://127.0.0.1:9/mcp"), "url"),
        (lambda d: d.__setitem__("id", "Has Spaces"), "id"),
        (
            lambda d: d.__setitem__("install", {"module": "pairlab.intervention", "pypi": "a==1"}),
            "exactly one",
        ),
        (
            lambda d: d.__setitem__("seed_files", [{"into": "home", "path": "../x", "text": ""}]),
            "inside",
        ),
        (lambda d: d["install"].__setitem__("debian", ["git; rm -rf /"]), "install.debian"),
        (lambda d: d["install"].__setitem__("debian", ["git", "git"]), "install.debian"),
        (
            lambda d: d.__setitem__("install", {"module": "pairlab.intervention", "debian": ["g"]}),
            "'debian' belong",
        ),
        (lambda d: d.__setitem__("startup_timeout_s", 0), "startup_timeout_s"),
        (lambda d: d.__setitem__("version", 1), "version"),
    ],
)
def test_other_malformed_manifests_are_refused(mutate: Any, words: str) -> None:
    error = refuse(mutate)
    assert error.reason == ReasonCode.INVALID_INTERVENTION
    assert words in error.message


def test_the_hash_follows_meaning_not_formatting(tmp_path: Path) -> None:
    base = parse_manifest(copy.deepcopy(VALID))
    loose = tmp_path / "loose.yaml"
    loose.write_text(
        "# a comment\n" + yaml.safe_dump(VALID, default_flow_style=True, sort_keys=False)
    )
    assert manifest_sha256(load_manifest(loose)) == manifest_sha256(base)
    changed = copy.deepcopy(VALID)
    changed["startup_timeout_s"] = 21
    assert manifest_sha256(parse_manifest(changed)) != manifest_sha256(base)


def test_interventions_resolve_by_id_or_path(tmp_path: Path) -> None:
    assert "reference" in shipped_intervention_ids()
    path = tmp_path / "anything.yaml"
    path.write_text(yaml.safe_dump(VALID))
    loaded = load_intervention(str(path))
    assert loaded.identity.id == "example-server"
    assert loaded.identity.manifest_sha256 == manifest_sha256(loaded.manifest)
    with pytest.raises(InvalidInputError) as info:
        load_intervention("no-such-server")
    assert info.value.reason == ReasonCode.UNKNOWN_INTERVENTION
    assert "reference" in info.value.message  # the shipped ids are named
    (tmp_path / "other.yaml").write_text(yaml.safe_dump(VALID))
    with pytest.raises(InvalidInputError) as info:
        load_intervention("other", tmp_path)  # a shipped file whose id is not its name
    assert info.value.reason == ReasonCode.INVALID_INTERVENTION


def test_the_reference_manifest_describes_the_shipped_server() -> None:
    manifest = load_intervention("reference").manifest
    assert manifest.mcp_name == SERVER_NAME and manifest.version == SERVER_VERSION
    assert manifest.install.module == "pairlab.intervention"
    assert manifest.env_vars == list(PASSED_ENV)
    assert manifest.supported_arms == ("optimizer", "retrieval", "full")
    assert (REPO_ROOT / "pyproject.toml").read_text().count(
        f'{manifest.command} = "pairlab.intervention.cli:main"'
    ) == 1


def test_every_shipped_manifest_loads() -> None:
    for ident in shipped_intervention_ids():
        assert load_intervention(ident).manifest.id == ident
