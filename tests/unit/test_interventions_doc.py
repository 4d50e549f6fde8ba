"""docs/interventions.md stays true: its manifests validate, its reason codes exist."""

from __future__ import annotations

import re

import yaml

from pairlab.core.errors import ReasonCode
from pairlab.core.intervention_wiring import claude_arm_args
from pairlab.core.schemas.intervention_manifest import InterventionManifest, parse_manifest
from tests.support import REPO_ROOT

DOC = (REPO_ROOT / "docs" / "interventions.md").read_text()


def _blocks(kind: str) -> list[str]:
    return [
        re.sub(r"^ {3}", "", b, flags=re.M) for b in re.findall(rf"```{kind}\n(.*?)```", DOC, re.S)
    ]


def test_the_runnable_example_validates_and_differs_by_arm() -> None:
    (example,) = _blocks("yaml")
    manifest = parse_manifest(yaml.safe_load(example))
    assert manifest.supported_arms == ("optimizer",)
    assert manifest.arm_wiring("optimizer") is not None
    assert claude_arm_args(manifest, "optimizer")[-1].startswith('{"mcpServers":{"token-optimizer"')


def test_the_pypi_skeleton_validates_once_its_hash_is_filled_in() -> None:
    skeleton = next(b for b in _blocks("text") if "pypi:" in b)
    data = yaml.safe_load(skeleton.replace("<64 lowercase hex>", "ab" * 32))
    manifest = parse_manifest(data)
    assert manifest.install.package == "my-mcp-server"
    assert manifest.arm_wiring("retrieval") is None


def test_every_field_and_reason_the_doc_names_exists() -> None:
    fields = set(re.findall(r"^\| `([a-z_]+)` \|", DOC, re.M))
    assert set(InterventionManifest.model_fields) <= fields
    for code in re.findall(
        r"^\| `([a-z-]+)` \| (?:a field|no `command`|`pypi`|anything|`--intervention)", DOC, re.M
    ):
        assert code in {str(c) for c in ReasonCode}, code
