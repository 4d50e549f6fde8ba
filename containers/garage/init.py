#!/usr/bin/env python3
"""garage-init: the one-shot service that makes the stack's Garage nodes one cluster.

Through the admin API (v2, bearer GARAGE_ADMIN_TOKEN) of every node in GARAGE_NODES
("host,host,..."): waits for each node, connects them, assigns one storage role per
node (one zone each: replication factor 3 puts a copy in every zone), applies the
layout, waits for the cluster to be healthy, imports the key the workers use
(AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY) and creates the bucket (PAIRLAB_S3_BUCKET)
with read/write/owner rights for that key. Every step is idempotent: a second run on a
configured cluster changes nothing. Standard library only (the base image's python3).
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.error
import urllib.request
from typing import Any

ADMIN_PORT = 3903
RPC_PORT = 3901
CAPACITY = int(os.environ.get("GARAGE_NODE_CAPACITY_BYTES", str(10 * 1024**3)))
TIMEOUT_S = float(os.environ.get("GARAGE_INIT_TIMEOUT_S", "120"))


def log(message: str) -> None:
    print(f"garage-init: {message}", file=sys.stderr, flush=True)


def call(host: str, method: str, path: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        f"http://{host}:{ADMIN_PORT}{path}",
        data=data,
        method=method,
        headers={
            "Authorization": f"Bearer {os.environ['GARAGE_ADMIN_TOKEN']}",
            "Content-Type": "application/json",
        },
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        raw = response.read()
    return json.loads(raw) if raw else None


def wait_for(what: str, probe: Any) -> Any:
    deadline = time.monotonic() + TIMEOUT_S
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            result = probe()
            if result:
                return result
        except (OSError, urllib.error.URLError, KeyError, ValueError) as exc:
            last = exc
        time.sleep(1)
    raise SystemExit(f"garage-init: timed out waiting for {what} ({last})")


def node_id(host: str) -> str:
    info = call(host, "GET", "/v2/GetNodeInfo?node=self")
    return str(next(iter(info["success"].values()))["nodeId"])


def main() -> int:
    hosts = [h.strip() for h in os.environ["GARAGE_NODES"].split(",") if h.strip()]
    bucket = os.environ.get("PAIRLAB_S3_BUCKET", "pairlab")
    key_id = os.environ["AWS_ACCESS_KEY_ID"]
    secret = os.environ["AWS_SECRET_ACCESS_KEY"]
    ids = {host: wait_for(f"node {host}", lambda h=host: node_id(h)) for host in hosts}
    log("nodes " + ", ".join(f"{h}={i[:16]}" for h, i in ids.items()))
    first = hosts[0]
    peers_file = os.environ.get("GARAGE_PEERS_FILE", "/var/lib/garage-peers/bootstrap_peers")
    if os.path.isdir(os.path.dirname(peers_file)):  # read by every node's entrypoint on restart
        with open(peers_file, "w", encoding="utf-8") as handle:
            handle.write("".join(f"{ids[h]}@{h}:{RPC_PORT}\n" for h in hosts))
    peers = [f"{ids[h]}@{h}:{RPC_PORT}" for h in hosts[1:]]
    if peers:
        for result in call(first, "POST", "/v2/ConnectClusterNodes", peers):
            if not result.get("success"):
                log(f"connect: {result.get('error')} (retrying through the layout)")
    layout = call(first, "GET", "/v2/GetClusterLayout")
    assigned = {role["id"] for role in layout["roles"]}
    missing = [h for h in hosts if ids[h] not in assigned]
    if missing:
        roles = [
            {"id": ids[h], "zone": f"z{hosts.index(h) + 1}", "capacity": CAPACITY, "tags": [h]}
            for h in missing
        ]
        call(first, "POST", "/v2/UpdateClusterLayout", {"roles": roles})
        version = int(layout["version"]) + 1
        call(first, "POST", "/v2/ApplyClusterLayout", {"version": version})
        log(f"layout version {version} applied ({len(missing)} role(s) assigned)")
    else:
        log(f"layout version {layout['version']} already holds every node")

    def healthy() -> bool:
        health = call(first, "GET", "/v2/GetClusterHealth")
        return health["status"] == "healthy" and health["storageNodesUp"] == len(hosts)

    wait_for("a healthy cluster", healthy)
    try:
        call(first, "GET", f"/v2/GetKeyInfo?id={key_id}")
        log(f"key {key_id} present")
    except urllib.error.HTTPError as exc:
        if exc.code != 404:
            raise
        call(
            first,
            "POST",
            "/v2/ImportKey",
            {"accessKeyId": key_id, "secretAccessKey": secret, "name": "pairlab"},
        )
        log(f"key {key_id} imported")
    try:
        info = call(first, "GET", f"/v2/GetBucketInfo?globalAlias={bucket}")
        log(f"bucket {bucket} present")
    except urllib.error.HTTPError as exc:
        if exc.code != 404:
            raise
        info = call(first, "POST", "/v2/CreateBucket", {"globalAlias": bucket})
        log(f"bucket {bucket} created")
    call(
        first,
        "POST",
        "/v2/AllowBucketKey",
        {
            "bucketId": info["id"],
            "accessKeyId": key_id,
            "permissions": {"read": True, "write": True, "owner": True},
        },
    )
    log(f"key {key_id} may read and write {bucket}: done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
