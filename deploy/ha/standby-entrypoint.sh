#!/bin/sh
# The standby: on first start, copy the primary with pg_basebackup -R
# (which writes standby.signal and primary_conninfo, with
# application_name=standby1 so that the primary's
# synchronous_standby_names can name it), then run postgres.
set -e
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  until pg_isready -h postgres -U "$POSTGRES_USER" -q; do sleep 1; done
  pg_basebackup -d "host=postgres user=$POSTGRES_USER application_name=standby1" \
    -D "$PGDATA" -X stream -R --checkpoint=fast
  chmod 700 "$PGDATA"
fi
exec postgres
