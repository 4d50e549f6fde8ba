"""Planted secrets never leave the machine: redacted (counted by kind) or refused.

A hand-built run carries keys of every kind, home paths and e-mails in its
transcripts, outputs, episode records, a Parquet column and the approval record.
After publishing to a real S3 HTTP server, every stored byte is scanned for the
planted strings.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from pairlab.adapters.store import open_store
from pairlab.adapters.store.publish import publish_run
from pairlab.cli import main
from pairlab.core.errors import PublishError, ReasonCode
from tests.integration.store.conftest import FAST_S3_OPTIONS, S3Server, s3_client
from tests.integration.store.run_dirs import snapshot, tiny_png, write_trial_run

PEM_BODY = "MIIEowIBAAKCAQEA7bq9PlantedPrivateKeyBody0123456789abcdefXYZ"
GCP_PEM_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjPlantedGcpBody"
GCP_KEY_ID = "0123456789abcdef0123456789abcdef01234567"

# kind -> (text to plant, the strings that must not reach the server)
PLANTS: dict[str, tuple[str, list[str]]] = {
    "anthropic-api-key": (
        "ANTHROPIC_API_KEY=sk-ant-api03-PlantedAnthropicKey0123456789abcdefABCDEF-xyz",
        ["sk-ant-api03-PlantedAnthropicKey"],
    ),
    "openai-api-key": (
        "use sk-proj-PlantedOpenAIKey0123456789abcdefghijklmnop for the call",
        ["sk-proj-PlantedOpenAIKey"],
    ),
    "google-api-key": (
        "key=AIzaSyPlantedGoogleKey0123456789abcdefgh",
        ["AIzaSyPlantedGoogleKey"],
    ),
    "github-token": (
        "git push https://x:ghp_PlantedGithubToken0123456789abcdefghij@github.invalid",
        ["ghp_PlantedGithubToken"],
    ),
    "slack-token": ("SLACK=xoxb-1234567890-PlantedSlackToken", ["xoxb-1234567890-PlantedSlack"]),
    "huggingface-token": (
        "HF_TOKEN=hf_PlantedHuggingFaceToken0123456789abcd",
        ["hf_PlantedHuggingFaceToken"],
    ),
    "aws-access-key-id": ("aws_access_key_id = AKIAPLANTEDAWSKEY123", ["AKIAPLANTEDAWSKEY123"]),
    "aws-secret-access-key": (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiPlantedSecret",
        ["wJalrXUtnFEMI/K7MDENG/bPxRfiPlantedSecret"],
    ),
    "private-key": (
        f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----",
        [PEM_BODY],
    ),
    "auth-header": (
        "curl -H 'Authorization: Bearer PlantedBearerToken.abcdef0123456789'",
        ["PlantedBearerToken.abcdef0123456789"],
    ),
    "bearer-token": (
        "the agent sent bearer PlantedLooseBearer0123456789abcdef upstream",
        ["PlantedLooseBearer0123456789abcdef"],
    ),
    "email": ("mail alice.planted@example.org for access", ["alice.planted@example.org"]),
    "home-path": (
        "edited /home/plantuser/project/app.py and /Users/plantmac/notes.md and /root/.netrc",
        ["/home/plantuser", "plantuser", "/Users/plantmac", "plantmac", "/root/.netrc"],
    ),
}
HOME_PATHS_PER_PLANT = 3
ALL_SECRETS = [s for _, secrets in PLANTS.values() for s in secrets] + [GCP_PEM_BODY, GCP_KEY_ID]


def _all_plants() -> str:
    return "\n".join(text for text, _ in PLANTS.values())


def write_run_with_secrets(root: Path) -> tuple[Path, Counter[str]]:
    """A trial run whose every kind of file holds planted secrets; returns the expected counts."""
    run_dir = write_trial_run(root, "trial-secrets")
    expected: Counter[str] = Counter()

    def planted(times: int) -> None:
        for kind in PLANTS:
            expected[kind] += times * (HOME_PATHS_PER_PLANT if kind == "home-path" else 1)

    episode_dir = next((run_dir / "episodes").iterdir())
    # A provider-native transcript (JSON lines; the PEM's newlines are JSON-escaped).
    lines = [
        {"type": "user", "message": {"content": "fix the bug"}},
        {"type": "assistant", "message": {"content": _all_plants()}},
    ]
    (episode_dir / "transcript.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8"
    )
    planted(1)
    (episode_dir / "stdout.txt").write_text(_all_plants() + "\n", encoding="utf-8")
    planted(1)
    # Episode records with include_transcript: the transcript travels inside episodes.jsonl.
    records = [
        json.loads(line)
        for line in (run_dir / "episodes.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    records[0]["transcript"] = {"prompt": "do it", "stdout": _all_plants(), "stderr": None}
    (run_dir / "episodes.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in records), encoding="utf-8"
    )
    planted(1)
    (run_dir / "report.md").write_text(f"# Report\n\n```\n{_all_plants()}\n```\n", encoding="utf-8")
    planted(1)
    # Parquet: compressed pages hide strings from a byte scan; the cells must be redacted.
    pl.DataFrame({"episodeId": ["e1", "e2"], "stdout": [_all_plants(), "clean"]}).write_parquet(
        run_dir / "episodes.parquet"
    )
    planted(1)
    # A GCP service-account key file left in the agent's HOME.
    service_account = {
        "type": "service_account",
        "project_id": "demo",
        "private_key_id": GCP_KEY_ID,
        "private_key": f"-----BEGIN PRIVATE KEY-----\n{GCP_PEM_BODY}\n-----END PRIVATE KEY-----\n",
        "client_email": "svc@demo.iam.gserviceaccount.com",
    }
    gcloud = episode_dir / "home" / ".config" / "gcloud"
    gcloud.mkdir(parents=True)
    (gcloud / "sa.json").write_text(json.dumps(service_account, indent=2), encoding="utf-8")
    expected["gcp-service-account-key"] += 2
    expected["email"] += 1
    # The approval record names its approver by e-mail.
    (run_dir / "trials" / "approval.json").write_text(
        json.dumps({"approved": True, "approver": "carol.approver@example.com"}), encoding="utf-8"
    )
    expected["email"] += 1
    ALL_SECRETS.extend(["carol.approver@example.com", "svc@demo.iam.gserviceaccount.com"])
    return run_dir, expected


def _stored_objects(endpoint: str, url: str) -> dict[str, bytes]:
    client = s3_client(endpoint)
    bucket, _, prefix = url[len("s3://") :].partition("/")
    listed = client.list_objects_v2(Bucket=bucket, Prefix=prefix)
    return {
        item["Key"]: client.get_object(Bucket=bucket, Key=item["Key"])["Body"].read()
        for item in listed.get("Contents", [])
    }


def _leaks(objects: dict[str, bytes]) -> list[tuple[str, str]]:
    found = []
    for key, data in objects.items():
        texts = [data.decode("latin-1")]
        if key.endswith(".parquet"):
            frame = pl.read_parquet(io.BytesIO(data))
            texts.append(json.dumps(frame.to_dicts()))
        for secret in ALL_SECRETS:
            escaped = json.dumps(secret)[1:-1]
            if any(secret in text or escaped in text for text in texts):
                found.append((key, secret))
    return found


@pytest.mark.s3
def test_planted_secrets_are_redacted_and_counted(
    s3_url: str, s3_server: S3Server, tmp_path: Path
) -> None:
    run_dir, expected = write_run_with_secrets(tmp_path / "local")
    before = snapshot(run_dir)
    assert _leaks({k: v for k, v in before.items()})  # the planted strings are really there

    manifest = publish_run(run_dir, open_store(s3_url, **FAST_S3_OPTIONS), policy="redact")

    stored = _stored_objects(s3_server.endpoint, s3_url)
    assert len(stored) == len(before) + 1  # every object, plus the manifest
    assert _leaks(stored) == []
    assert manifest.redaction.findings_by_kind == dict(sorted(expected.items()))
    assert manifest.redaction.objects_scanned == len(before)
    assert manifest.approval == {"approved": True, "approver": "[REDACTED:email]"}
    assert snapshot(run_dir) == before  # redacted copies were uploaded, the run is untouched
    # Redacted text stays well-formed: every JSON line still parses.
    for key, data in stored.items():
        if key.endswith(".jsonl"):
            for line in data.decode("utf-8").splitlines():
                json.loads(line)
        elif key.endswith(".json"):
            json.loads(data)
    parquet = next(v for k, v in stored.items() if k.endswith("episodes.parquet"))
    cells = pl.read_parquet(io.BytesIO(parquet))["stdout"].to_list()
    assert "[REDACTED:openai-api-key]" in cells[0] and cells[1] == "clean"


@pytest.mark.s3
def test_refuse_policy_uploads_nothing(
    s3_url: str, s3_server: S3Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir, _ = write_run_with_secrets(tmp_path / "local")
    with pytest.raises(PublishError) as caught:
        publish_run(run_dir, open_store(s3_url, **FAST_S3_OPTIONS), policy="refuse")
    assert caught.value.reason == ReasonCode.SECRET_FOUND
    assert "transcript.jsonl" in caught.value.message
    assert "anthropic-api-key" in caught.value.message
    assert _stored_objects(s3_server.endpoint, s3_url) == {}

    with pytest.raises(SystemExit) as exited:
        main(["publish", str(run_dir), "--to", s3_url, "--on-secret", "refuse", "--json"])
    assert exited.value.code == 1
    assert json.loads(capsys.readouterr().out)["reason_code"] == "secret-found"
    assert _stored_objects(s3_server.endpoint, s3_url) == {}


def test_secret_in_binary_object_refuses_even_when_redacting(tmp_path: Path) -> None:
    run_dir = write_trial_run(tmp_path / "local", "trial-binary")
    (run_dir / "forest.png").write_bytes(tiny_png() + b"tEXt\x00author=dev@example.com\x00")
    store_dir = tmp_path / "store"
    with pytest.raises(PublishError) as caught:
        publish_run(run_dir, open_store(str(store_dir)), policy="redact")
    assert caught.value.reason == ReasonCode.SECRET_FOUND
    assert "forest.png" in caught.value.message and "email" in caught.value.message
    assert not store_dir.exists() or not any(store_dir.rglob("*"))
