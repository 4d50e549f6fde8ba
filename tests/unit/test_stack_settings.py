"""`pairlab stack`'s settings: secrets generated once and kept, private files, the host's
S3 variables pointing at the stack's Garage (pairlab.adapters.stack)."""

from __future__ import annotations

import re
import stat
from pathlib import Path

from pairlab.adapters.stack import (
    ServiceState,
    StackSettings,
    ensure_env_files,
    read_env_file,
)


def test_secrets_are_generated_once_kept_and_private(tmp_path: Path) -> None:
    settings = StackSettings.from_env(
        {"PAIRLAB_STACK_DIR": str(tmp_path / "state"), "PAIRLAB_S3_PORT": "3999"}
    )
    first = ensure_env_files(settings)
    assert re.fullmatch(r"GK[0-9a-f]{24}", first["PAIRLAB_S3_KEY_ID"])  # Garage's key format
    assert re.fullmatch(r"[0-9a-f]{64}", first["PAIRLAB_S3_SECRET"])
    assert re.fullmatch(r"[0-9a-f]{64}", first["GARAGE_RPC_SECRET"])
    again = ensure_env_files(settings)
    assert again == first  # a second `stack up` keeps the stack's secrets
    for path in (settings.env_file, settings.s3_env_file):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    s3 = read_env_file(settings.s3_env_file)
    assert s3["AWS_ACCESS_KEY_ID"] == first["PAIRLAB_S3_KEY_ID"]
    assert s3["AWS_SECRET_ACCESS_KEY"] == first["PAIRLAB_S3_SECRET"]
    assert s3["AWS_ENDPOINT_URL_S3"] == "http://127.0.0.1:3999"


def test_one_shot_services_are_ready_only_after_exit_0() -> None:
    assert ServiceState("garage-init", "c", "exited", None, 0).ready
    failed = ServiceState("garage-init", "c", "exited", None, 1)
    assert not failed.ready and failed.failed
    assert not ServiceState("garage-init", "c", "running", None, None).ready
    assert ServiceState("worker", "c", "running", "healthy", None).ready
    assert not ServiceState("worker", "c", "running", "starting", None).ready
    assert ServiceState("worker", "c", "running", "unhealthy", None).failed
