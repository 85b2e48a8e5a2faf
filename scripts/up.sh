#!/usr/bin/env bash
# Brings up the real servers runstream needs, on loopback: PostgreSQL 15 and
# Redis 7 from Debian's packages. Installs them when absent, starts them when
# stopped, and is a no-op when they already answer. Prints the environment
# (RUNSTREAM_POSTGRES_URL, RUNSTREAM_REDIS_URL) to use them, and in
# RUNSTREAM_UP_STARTED the servers this run started ("postgres redis", or
# less), so that a caller such as scripts/test.sh can stop them again.
#
# Elsewhere (not root, not Debian, or servers of your own): set
# RUNSTREAM_POSTGRES_URL and RUNSTREAM_REDIS_URL and this script only checks
# that they answer.
set -euo pipefail

PG_URL_DEFAULT="postgres://runstream:runstream@127.0.0.1:5432/runstream?sslmode=disable"
REDIS_URL_DEFAULT="redis://127.0.0.1:6379/0"
log() { echo "up: $*" >&2; }

apt_updated=0
started=""
apt_install() {
  if [ "$(id -u)" != 0 ]; then
    log "need to install $* but not root: install it, or set RUNSTREAM_POSTGRES_URL/RUNSTREAM_REDIS_URL"
    exit 1
  fi
  if [ "$apt_updated" = 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    apt_updated=1
  fi
  log "installing $*"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2
}

# need_cmd CMD PACKAGE...: install PACKAGE when CMD is missing.
need_cmd() {
  local cmd=$1; shift
  command -v "$cmd" >/dev/null 2>&1 || apt_install "$@"
}

postgres_up() {
  if [ -n "${RUNSTREAM_POSTGRES_URL:-}" ] && [ "${RUNSTREAM_POSTGRES_URL}" != "$PG_URL_DEFAULT" ]; then
    need_cmd psql postgresql-client
    psql "$RUNSTREAM_POSTGRES_URL" -qAtc 'select 1' >/dev/null || { log "RUNSTREAM_POSTGRES_URL does not answer"; exit 1; }
    return
  fi
  if [ ! -x /usr/lib/postgresql/15/bin/postgres ]; then
    apt_install postgresql-15 postgresql-client-15
  fi
  need_cmd pgbench postgresql-contrib
  if ! pg_lsclusters -h 2>/dev/null | awk '$1==15 && $2=="main"' | grep -q .; then
    log "creating cluster 15/main"
    pg_createcluster 15 main >&2
  fi
  if ! pg_lsclusters -h | awk '$1==15 && $2=="main" {print $4}' | grep -q online; then
    log "starting PostgreSQL 15"
    # More connections than the default 100: benchmarks and parallel tests.
    pg_conftool 15 main set max_connections 300 >&2 || true
    # Commit timestamps: the relay measures commit-to-ack from each event's
    # real commit (runstream_relay_commit_to_ack_seconds).
    pg_conftool 15 main set track_commit_timestamp on >&2 || true
    pg_ctlcluster 15 main start >&2
    started="$started postgres"
  fi
  for _ in $(seq 1 50); do
    su postgres -c "psql -qAtc 'select 1'" >/dev/null 2>&1 && break
    sleep 0.2
  done
  su postgres -c "psql -qAt" >/dev/null <<'SQL'
DO $$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'runstream') THEN
    CREATE ROLE runstream LOGIN PASSWORD 'runstream';
  END IF;
END $$;
SQL
  if ! su postgres -c "psql -qAtc \"select 1 from pg_database where datname='runstream'\"" | grep -q 1; then
    su postgres -c "createdb -O runstream runstream"
  fi
  psql "$PG_URL_DEFAULT" -qAtc 'select 1' >/dev/null
}

redis_up() {
  if [ -n "${RUNSTREAM_REDIS_URL:-}" ] && [ "${RUNSTREAM_REDIS_URL}" != "$REDIS_URL_DEFAULT" ]; then
    need_cmd redis-cli redis-tools
    redis-cli -u "$RUNSTREAM_REDIS_URL" ping | grep -q PONG || { log "RUNSTREAM_REDIS_URL does not answer"; exit 1; }
    return
  fi
  need_cmd redis-server redis-server
  if ! redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; then
    log "starting Redis on 127.0.0.1:6379"
    mkdir -p /var/lib/runstream-redis
    redis-server --bind 127.0.0.1 --port 6379 --daemonize yes --save '' --appendonly no \
      --dir /var/lib/runstream-redis --logfile /var/lib/runstream-redis/redis.log >&2
    started="$started redis"
    for _ in $(seq 1 50); do
      redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG && break
      sleep 0.1
    done
  fi
  redis-cli -h 127.0.0.1 -p 6379 ping | grep -q PONG
}

postgres_up
redis_up
echo "export RUNSTREAM_POSTGRES_URL='${RUNSTREAM_POSTGRES_URL:-$PG_URL_DEFAULT}'"
echo "export RUNSTREAM_REDIS_URL='${RUNSTREAM_REDIS_URL:-$REDIS_URL_DEFAULT}'"
echo "export RUNSTREAM_UP_STARTED='${started# }'"
log "PostgreSQL and Redis are up"
