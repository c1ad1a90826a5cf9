#!/usr/bin/env bash
# A throwaway PostgreSQL 15 cluster with pg_stat_statements preloaded, for
# `nimbus bench --statements` (the shared server on 5432 does not preload it, and must not be
# restarted or reconfigured: CI and the tests use it).
#
#   scripts/pg-stat-statements-cluster.sh start    # initdb, start, CREATE EXTENSION; prints the URL
#   scripts/pg-stat-statements-cluster.sh status   # running or not
#   scripts/pg-stat-statements-cluster.sh stop     # stop it and delete its directory
#
# The cluster runs as the `postgres` OS user (the script switches to it when run as root), on
# 127.0.0.1 port $PGSS_PORT (default 5433), trust authentication, in
# ${TMPDIR:-/tmp}/nimbus-pg-stat-statements-$PGSS_PORT. Like the main server it runs with
# autovacuum off, fsync on (and synchronous_commit on), shared_buffers 128MB and
# max_connections 100. PG_BIN overrides where initdb and pg_ctl are
# (default /usr/lib/postgresql/15/bin).
set -euo pipefail

PORT="${PGSS_PORT:-5433}"
PG_BIN="${PG_BIN:-/usr/lib/postgresql/15/bin}"
DIR="${TMPDIR:-/tmp}/nimbus-pg-stat-statements-${PORT}"
DATA="$DIR/data"
LOG="$DIR/server.log"
URL="postgres://postgres@127.0.0.1:${PORT}/postgres"

die() {
    echo "pg-stat-statements-cluster: $*" >&2
    exit 1
}

# Runs a command as the postgres OS user.
as_postgres() {
    if [ "$(id -un)" = postgres ]; then
        "$@"
    elif [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$@"
    else
        die "run as root or as the postgres user (initdb and the server run as postgres)"
    fi
}

running() {
    [ -f "$DATA/postmaster.pid" ] && as_postgres "$PG_BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1
}

start() {
    [ -x "$PG_BIN/initdb" ] || die "no initdb in $PG_BIN (set PG_BIN)"
    [ -f "$("$PG_BIN/pg_config" --pkglibdir 2>/dev/null || echo /usr/lib/postgresql/15/lib)/pg_stat_statements.so" ] \
        || die "pg_stat_statements.so is not installed for this PostgreSQL (postgresql-contrib)"
    if running; then
        echo "already running: $URL"
        return 0
    fi
    if [ -e "$DIR" ]; then
        die "$DIR exists but no server runs there: remove it with '$0 stop' first"
    fi
    mkdir -p "$DIR"
    chown postgres: "$DIR" 2>/dev/null || true
    chmod 700 "$DIR"
    as_postgres "$PG_BIN/initdb" -D "$DATA" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 \
        --no-instructions >"$DIR/initdb.log" 2>&1 || {
        cat "$DIR/initdb.log" >&2
        die "initdb failed"
    }
    cat >>"$DATA/postgresql.conf" <<EOF

# nimbus: a throwaway cluster for pg_stat_statements (scripts/pg-stat-statements-cluster.sh)
port = $PORT
listen_addresses = '127.0.0.1'
unix_socket_directories = '$DIR'
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track = top
pg_stat_statements.track_utility = on
pg_stat_statements.max = 10000
autovacuum = off
fsync = on
synchronous_commit = on
shared_buffers = 128MB
max_connections = 100
EOF
    as_postgres "$PG_BIN/pg_ctl" -D "$DATA" -l "$LOG" -w -t 60 start >/dev/null || {
        tail -n 20 "$LOG" >&2 || true
        die "the server did not start (log: $LOG)"
    }
    as_postgres "$PG_BIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -d postgres -qAt \
        -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" \
        -c "SELECT 'pg_stat_statements ' || extversion FROM pg_extension WHERE extname = 'pg_stat_statements'"
    echo "running: $URL"
}

stop() {
    if running; then
        as_postgres "$PG_BIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null
    fi
    # Only ever the directory this script made.
    case "$DIR" in
        */nimbus-pg-stat-statements-*) rm -rf -- "$DIR" ;;
        *) die "refusing to delete $DIR" ;;
    esac
    echo "stopped and removed $DIR"
}

case "${1:-start}" in
    start) start ;;
    stop) stop ;;
    status)
        if running; then echo "running: $URL"; else echo "not running"; exit 1; fi
        ;;
    *) die "usage: $0 [start|stop|status]" ;;
esac
