#!/bin/sh
# Runs once, when the official postgres image initialises the primary's
# data directory (/docker-entrypoint-initdb.d): lets the standby stream
# WAL as the runstream role. The replication settings themselves are in
# the primary's command line (deploy/compose.ha.yaml).
set -e
echo "host replication ${POSTGRES_USER} all scram-sha-256" >> "$PGDATA/pg_hba.conf"
