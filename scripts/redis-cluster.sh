#!/usr/bin/env bash
# Brings up a real three-master Redis Cluster of Debian's redis-server on
# loopback ports 7101-7103, for the projector's cluster tests. Idempotent: a
# no-op when the cluster already answers with cluster_state:ok. Prints the
# environment to use it (RUNSTREAM_TEST_REDIS_CLUSTER_ADDRS), and in
# RUNSTREAM_CLUSTER_STARTED the ports of the nodes this run started.
#
# `scripts/redis-cluster.sh stop PORT...` shuts those nodes down again
# (scripts/test.sh does when it fails).
#
# Elsewhere (a cluster of your own): set RUNSTREAM_TEST_REDIS_CLUSTER_ADDRS
# and this script only checks that it answers.
set -euo pipefail

PORTS=(7101 7102 7103)
DIR=/var/lib/runstream-redis-cluster
ADDRS_DEFAULT="127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103"
log() { echo "redis-cluster: $*" >&2; }

if [ "${1:-}" = stop ]; then
  shift
  for port in "$@"; do
    redis-cli -h 127.0.0.1 -p "$port" shutdown nosave >/dev/null 2>&1 || true
    log "stopped the cluster node on 127.0.0.1:$port"
  done
  exit 0
fi
started=""

# state HOST PORT: the node's cluster_state (ok, fail), or nothing when it
# does not answer.
state() {
  redis-cli -h "$1" -p "$2" cluster info 2>/dev/null | tr -d '\r' | awk -F: '$1=="cluster_state" {print $2}'
}

# info_field PORT FIELD: one field of a local node's CLUSTER INFO.
info_field() {
  redis-cli -h 127.0.0.1 -p "$1" cluster info 2>/dev/null | tr -d '\r' | awk -F: -v f="$2" '$1==f {print $2}'
}

all_ok() {
  local host port
  for addr in ${1//,/ }; do
    host=${addr%:*}; port=${addr##*:}
    [ "$(state "$host" "$port")" = ok ] || return 1
  done
}

wait_ok() {
  for _ in $(seq 1 100); do
    all_ok "$1" && return 0
    sleep 0.1
  done
  return 1
}

if [ -n "${RUNSTREAM_TEST_REDIS_CLUSTER_ADDRS:-}" ] && [ "$RUNSTREAM_TEST_REDIS_CLUSTER_ADDRS" != "$ADDRS_DEFAULT" ]; then
  command -v redis-cli >/dev/null 2>&1 || { log "redis-cli is needed to check RUNSTREAM_TEST_REDIS_CLUSTER_ADDRS"; exit 1; }
  wait_ok "$RUNSTREAM_TEST_REDIS_CLUSTER_ADDRS" || { log "the cluster at RUNSTREAM_TEST_REDIS_CLUSTER_ADDRS is not cluster_state:ok"; exit 1; }
  echo "export RUNSTREAM_TEST_REDIS_CLUSTER_ADDRS='$RUNSTREAM_TEST_REDIS_CLUSTER_ADDRS'"
  exit 0
fi

if ! all_ok "$ADDRS_DEFAULT"; then
  if ! command -v redis-server >/dev/null 2>&1; then
    [ "$(id -u)" = 0 ] || { log "redis-server is missing and we are not root: install it or set RUNSTREAM_TEST_REDIS_CLUSTER_ADDRS"; exit 1; }
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >&2
  fi
  for port in "${PORTS[@]}"; do
    if ! redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null | grep -q PONG; then
      log "starting a cluster node on 127.0.0.1:$port"
      started="$started $port"
      mkdir -p "$DIR/$port"
      redis-server --bind 127.0.0.1 --port "$port" --daemonize yes \
        --cluster-enabled yes --cluster-config-file "$DIR/$port/nodes.conf" --cluster-node-timeout 5000 \
        --save '' --appendonly no --dir "$DIR/$port" \
        --pidfile "$DIR/$port/redis.pid" --logfile "$DIR/$port/redis.log" >&2
    fi
  done
  for port in "${PORTS[@]}"; do
    for _ in $(seq 1 50); do
      redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null | grep -q PONG && break
      sleep 0.1
    done
    redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null | grep -q PONG || { log "node $port does not answer; see $DIR/$port/redis.log"; exit 1; }
  done
  assigned=0
  for port in "${PORTS[@]}"; do
    assigned=$((assigned + $(info_field "$port" cluster_slots_assigned)))
  done
  # Nodes restarted from their nodes.conf rejoin by themselves: give them a
  # moment. Fresh nodes (no slots anywhere) need the cluster created.
  if [ "$assigned" = 0 ] || ! wait_ok "$ADDRS_DEFAULT"; then
    if [ "$assigned" != 0 ]; then
      # Half-configured (a node lost its config): start over. These are
      # throwaway test nodes.
      log "the cluster is not ok with slots assigned; resetting its nodes"
      for port in "${PORTS[@]}"; do
        redis-cli -h 127.0.0.1 -p "$port" flushall >/dev/null
        redis-cli -h 127.0.0.1 -p "$port" cluster reset hard >/dev/null
      done
    fi
    log "creating the cluster"
    redis-cli --cluster create 127.0.0.1:7101 127.0.0.1:7102 127.0.0.1:7103 \
      --cluster-replicas 0 --cluster-yes >&2
    wait_ok "$ADDRS_DEFAULT" || { log "the cluster did not reach cluster_state:ok"; exit 1; }
  fi
fi
echo "export RUNSTREAM_TEST_REDIS_CLUSTER_ADDRS='$ADDRS_DEFAULT'"
echo "export RUNSTREAM_CLUSTER_STARTED='${started# }'"
log "Redis Cluster is up on $ADDRS_DEFAULT"
