#!/bin/sh
# Garage node of the team stack: writes /run/garage/garage.toml from the environment, then
# runs the server. GARAGE_RPC_SECRET (64 hex) and GARAGE_ADMIN_TOKEN are shared by all nodes;
# GARAGE_NODE_HOST is this node's name on the stack's network.
set -eu
: "${GARAGE_NODE_HOST:?}" "${GARAGE_RPC_SECRET:?}" "${GARAGE_ADMIN_TOKEN:?}"
mkdir -p /run/garage
# After the first start, garage-init leaves the nodes' ids in the shared peers volume:
# bootstrap through host names (resolved again at every discovery), so a restarted node
# finds the others even when the engine gave the containers new addresses.
BOOTSTRAP=""
PEERS_FILE=/var/lib/garage-peers/bootstrap_peers
if [ -s "$PEERS_FILE" ]; then
  BOOTSTRAP="bootstrap_peers = [$(sed 's/.*/"&"/' "$PEERS_FILE" | paste -sd, -)]"
fi
cat > /run/garage/garage.toml <<CONF
metadata_dir = "/var/lib/garage/meta"
data_dir = "/var/lib/garage/data"
db_engine = "sqlite"
replication_factor = ${GARAGE_REPLICATION_FACTOR:-3}
rpc_bind_addr = "[::]:3901"
rpc_public_addr = "${GARAGE_NODE_HOST}:3901"
rpc_secret = "${GARAGE_RPC_SECRET}"
${BOOTSTRAP}

[s3_api]
s3_region = "${GARAGE_S3_REGION:-us-east-1}"
api_bind_addr = "[::]:3900"
root_domain = ".s3.garage.localhost"

[admin]
api_bind_addr = "[::]:3903"
admin_token = "${GARAGE_ADMIN_TOKEN}"
CONF
exec /usr/local/bin/garage -c /run/garage/garage.toml "${@:-server}"
