#!/usr/bin/env bash
# A Citus cluster on this machine, for the Citus suite: a coordinator and two worker nodes, each a
# PostgreSQL instance of its own on a local port, made from the Citus extension already installed
# in Debian's PostgreSQL (this script installs nothing and builds nothing: without the extension
# it says so and exits 3).
#
#   scripts/citus-cluster.sh start          # makes the nodes where missing, starts them, prints the URL
#   scripts/citus-cluster.sh stop           # stops the three nodes (their files stay)
#   scripts/citus-cluster.sh stop-node N    # stops node N (0 the coordinator, 1 and 2 the workers) at once
#   scripts/citus-cluster.sh start-node N   # starts node N again
#   scripts/citus-cluster.sh delete         # stops the nodes and deletes their files
#
# Ports: NIMBUS_CITUS_PORT (default 9700) for the coordinator, the next two for the workers.
# Files: NIMBUS_CITUS_DIR (default /var/tmp/nimbus-citus-<port>). The servers run as the
# `postgres` user, trust local connections on 127.0.0.1 only, and allow 300 connections and as
# many prepared transactions (Citus commits a transaction that wrote to two nodes in two phases).
set -euo pipefail

port=${NIMBUS_CITUS_PORT:-9700}
dir=${NIMBUS_CITUS_DIR:-/var/tmp/nimbus-citus-$port}
pg_bin=${NIMBUS_CITUS_PG_BIN:-/usr/lib/postgresql/15/bin}
ports=("$port" "$((port + 1))" "$((port + 2))")
names=(coordinator worker1 worker2)

as_postgres() {
  if [ "$(id -un)" = postgres ]; then
    "$@"
  elif [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    sudo -u postgres "$@"
  fi
}

has_citus() {
  [ -f "$("$pg_bin/pg_config" --pkglibdir 2>/dev/null || echo /usr/lib/postgresql/15/lib)/citus.so" ]
}

sql() { # sql <port> <statement>, without notices (such as "already exists, skipping")
  PGOPTIONS='-c client_min_messages=warning' as_postgres "$pg_bin/psql" -h 127.0.0.1 -p "$1" -U postgres -d postgres -qAtX -v ON_ERROR_STOP=1 -c "$2"
}

ready() { "$pg_bin/pg_isready" -h 127.0.0.1 -p "$1" -q; }

start_node() { # start_node <index>
  local i=$1 data="$dir/${names[$1]}"
  if [ ! -f "$data/PG_VERSION" ]; then
    mkdir -p "$dir"
    chown postgres: "$dir" 2>/dev/null || true
    as_postgres "$pg_bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --no-locale >/dev/null
    cat >>"$data/postgresql.conf" <<EOF
shared_preload_libraries = 'citus'
listen_addresses = '127.0.0.1'
port = ${ports[$i]}
unix_socket_directories = '$dir'
max_connections = 300
max_prepared_transactions = 300
shared_buffers = 128MB
EOF
  fi
  ready "${ports[$i]}" && return
  as_postgres "$pg_bin/pg_ctl" -D "$data" -l "$dir/${names[$i]}.log" -w -t 60 start >/dev/null
}

stop_node() { # stop_node <index> <mode>
  local data="$dir/${names[$1]}"
  [ -f "$data/postmaster.pid" ] || return 0
  as_postgres "$pg_bin/pg_ctl" -D "$data" -m "$2" -w -t 60 stop >/dev/null || true
}

case "${1:-}" in
  start)
    if ! has_citus; then
      echo "the Citus extension is not installed in $pg_bin/.. (citus.so): no Citus cluster" >&2
      exit 3
    fi
    for i in 0 1 2; do start_node "$i"; done
    for p in "${ports[@]}"; do
      sql "$p" "CREATE EXTENSION IF NOT EXISTS citus"
    done
    sql "$port" "SELECT citus_set_coordinator_host('127.0.0.1', $port)" >/dev/null
    for p in "${ports[@]:1}"; do
      if [ "$(sql "$port" "SELECT count(*) FROM pg_dist_node WHERE nodeport = $p")" = 0 ]; then
        sql "$port" "SELECT citus_add_node('127.0.0.1', $p)" >/dev/null
      fi
    done
    echo "postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
    ;;
  stop)
    for i in 2 1 0; do stop_node "$i" fast; done
    ;;
  stop-node)
    stop_node "${2:?which node: 0, 1 or 2}" immediate
    ;;
  start-node)
    start_node "${2:?which node: 0, 1 or 2}"
    ;;
  delete)
    for i in 2 1 0; do stop_node "$i" immediate; done
    rm -rf "$dir"
    ;;
  *)
    sed -n '2,17p' "$0" >&2
    exit 2
    ;;
esac
