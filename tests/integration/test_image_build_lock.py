"""Two processes building the same image at the same moment: one builds it, the other waits
on the tag's build lock and then reuses that image (pairlab.adapters.images.build_lock).

Real builds on the engine, under a test prefix of its own (PAIRLAB_IMAGE_PREFIX) and a lock
directory of its own: the test holds the simclient tag's lock itself until both builders
say they are waiting for it, then lets go, so both really contend for the same build. The
outcome is read from the builds' results and the engine's images (how many simclient images
carry the test's prefix label), never from timing.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pairlab.adapters.images.build import build_images
from pairlab.adapters.images.build_lock import LOCK_DIR_ENV, lock_path, tag_lock
from pairlab.adapters.images.docker_cli import run_docker
from pairlab.adapters.images.engine import inspect
from pairlab.adapters.images.registry import PREFIX_ENV, load_registry
from tests.integration.backend_fixtures import docker_client_or_skip
from tests.support import REPO_ROOT

pytestmark = pytest.mark.docker

BUILDER = (
    "import json; from pairlab.adapters.images.build import build_images; "
    "print(json.dumps(build_images(['simclient'])[0].to_json()))"
)


def _prefix_images(prefix: str, name: str) -> set[str]:
    listed = run_docker(
        [
            "image",
            "ls",
            "--quiet",
            "--no-trunc",
            "--filter",
            f"label=pairlab.prefix={prefix}",
            "--filter",
            f"label=pairlab.image={name}",
        ]
    )
    return set(listed.stdout.split())


@pytest.fixture
def prefix() -> Iterator[str]:
    """A fresh image prefix whose base is the shared default base, tagged under it."""
    docker_client_or_skip().close()
    base = build_images(["base"])[0]  # the default base: reused when present
    name = f"pairlablock{secrets.token_hex(3)}/"
    base_tag = name + load_registry()["base"].tag.split("/", 1)[1]
    assert run_docker(["tag", base.image_id, base_tag]).returncode == 0
    try:
        yield name
    finally:
        listed = run_docker(["image", "ls", "--format", "{{.Repository}}:{{.Tag}}"])
        for tag in [t for t in listed.stdout.split() if t.startswith(name)]:
            run_docker(["image", "rm", "--force", tag])
        for image_id in _prefix_images(name, "simclient"):  # an untagged second build
            run_docker(["image", "rm", "--force", image_id])


def _read_lines(stream: object, into: list[str]) -> None:
    for line in stream:  # type: ignore[attr-defined]
        into.append(line)


def test_a_second_builder_waits_for_the_first_and_reuses_its_image(
    prefix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(LOCK_DIR_ENV, str(tmp_path / "locks"))
    env = {**os.environ, PREFIX_ENV: prefix}
    tag = prefix + load_registry()["simclient"].tag.split("/", 1)[1]
    assert inspect(tag) is None
    builders: list[subprocess.Popen[str]] = []
    logs: list[list[str]] = [[], []]
    readers: list[threading.Thread] = []
    with tag_lock(tag, lambda _: None):  # held until both builders wait for it
        for log in logs:
            process = subprocess.Popen(
                [sys.executable, "-c", BUILDER],
                cwd=REPO_ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            reader = threading.Thread(target=_read_lines, args=(process.stderr, log))
            reader.start()
            builders.append(process)
            readers.append(reader)
        waiting = f"{tag}: another build holds {lock_path(tag)}; waiting for it"
        for process, log in zip(builders, logs, strict=True):
            while not any(waiting in line for line in log):
                assert process.poll() is None, "".join(log)  # it exited instead of waiting
                threading.Event().wait(0.2)
    # stdout read here, stderr only by its reader thread: communicate() would read stderr too,
    # and a line it took (e.g. "building ...") would be missing from the reader's log
    outputs = []
    for process in builders:
        assert process.stdout is not None
        with process.stdout:
            outputs.append(process.stdout.read())
        process.wait(timeout=900)
    for process, reader in zip(builders, readers, strict=True):
        reader.join()
        assert process.stderr is not None
        process.stderr.close()
    for process, log in zip(builders, logs, strict=True):
        assert process.returncode == 0, "".join(log)
    results = [json.loads(out.strip().splitlines()[-1]) for out in outputs]
    assert sorted(r["reused"] for r in results) == [False, True], results
    image = inspect(tag)
    assert image is not None
    assert {r["image_id"] for r in results} == {image["Id"]}
    assert _prefix_images(prefix, "simclient") == {image["Id"]}  # built once, not twice
    built_logs = ["".join(log) for log in logs]
    assert sum(f"building {tag}" in text for text in built_logs) == 1, built_logs
