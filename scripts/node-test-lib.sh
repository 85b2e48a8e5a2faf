# Shared by scripts/test-typescript.sh and scripts/test-kafkajs.sh, which
# source it after setting `name` (the prefix of their messages) and `root`
# (the checkout): Node.js and the servers checked, npm dependencies from
# the lockfile, this checkout's binary built, a Postgres schema of the
# test's own.

# require_node MIN_MAJOR WHAT: node and npm are there, node at least MIN_MAJOR.
require_node() {
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "$name: node and npm are required for $2 (Node.js $1 or later); install them (Debian: apt-get install nodejs npm)" >&2
    exit 1
  fi
  local major
  major=$(node -p 'process.versions.node.split(".")[0]')
  if [ "$major" -lt "$1" ]; then
    echo "$name: $2 needs Node.js $1 or later, found $(node --version)" >&2
    exit 1
  fi
}

# require_servers: Postgres and Redis (scripts/up.sh starts them when the
# URLs are not given) and psql, which creates the test's schema.
require_servers() {
  if [ -z "${RUNSTREAM_POSTGRES_URL:-}" ] || [ -z "${RUNSTREAM_REDIS_URL:-}" ]; then
    eval "$("$root/scripts/up.sh")"
  fi
  if ! command -v psql >/dev/null 2>&1; then
    echo "$name: psql is required (it creates the test's Postgres schema)" >&2
    exit 1
  fi
}

# npm_install: npm ci from the lockfile of the current directory, skipped
# when node_modules was installed from this very lockfile (a stamp of its
# hash); npm install where there is no lockfile.
npm_install() {
  if [ ! -f package-lock.json ]; then
    npm install --no-audit --no-fund --loglevel=error >&2
    return
  fi
  local lock_sum
  lock_sum=$(sha256sum package-lock.json | cut -d' ' -f1)
  if [ "$(cat node_modules/.runstream-lock-sha256 2>/dev/null)" != "$lock_sum" ]; then
    npm ci --no-audit --no-fund --loglevel=error >&2
    echo "$lock_sum" >node_modules/.runstream-lock-sha256
  fi
}

# build_runstream DIR: this checkout's binary as DIR/runstream: make
# test's (RUNSTREAM_TEST_BINARY, built once for every stage) when set,
# else built here.
build_runstream() {
  local t0
  if [ -n "${RUNSTREAM_TEST_BINARY:-}" ] && [ -x "$RUNSTREAM_TEST_BINARY" ]; then
    cp "$RUNSTREAM_TEST_BINARY" "$1/runstream"
    echo "$name: using make test's runstream binary" >&2
    return
  fi
  t0=$(date +%s)
  (cd "$root" && go build -o "$1/runstream" ./cmd/runstream)
  echo "$name: built runstream in $(( $(date +%s) - t0 ))s" >&2
}

# create_schema SCHEMA: creates it and sets pg_url to RUNSTREAM_POSTGRES_URL
# with that search_path; drop_schema SCHEMA (best effort) for the cleanup.
create_schema() {
  psql -q -v ON_ERROR_STOP=1 "$RUNSTREAM_POSTGRES_URL" -c "CREATE SCHEMA $1" >/dev/null
  case "$RUNSTREAM_POSTGRES_URL" in
    *\?*) pg_url="$RUNSTREAM_POSTGRES_URL&search_path=$1" ;;
    *) pg_url="$RUNSTREAM_POSTGRES_URL?search_path=$1" ;;
  esac
}
drop_schema() {
  psql -q "$RUNSTREAM_POSTGRES_URL" -c "DROP SCHEMA IF EXISTS $1 CASCADE" >/dev/null 2>&1 || true
}
