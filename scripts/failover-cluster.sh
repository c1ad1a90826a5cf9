#!/usr/bin/env bash
# A PostgreSQL primary with a hot standby, managed by pg_auto_failover (Debian's
# postgresql-15-auto-failover): a monitor and two nodes on local ports, for the failover test.
#
#   scripts/failover-cluster.sh start     # prints the multi-host URL endpoints connect with
#   scripts/failover-cluster.sh failover  # promotes the standby; waits until the roles swapped
#   scripts/failover-cluster.sh primary   # prints the port of the current primary
#   scripts/failover-cluster.sh stop      # stops everything and deletes the cluster's files
#
# Ports: NIMBUS_FAILOVER_PORT (default 6000) for the monitor, the next two for the nodes. Files
# live in NIMBUS_FAILOVER_DIR (default /tmp/nimbus-failover-<port>). The processes run as the
# `postgres` user, as PostgreSQL requires; the package is installed when missing.
set -euo pipefail

port=${NIMBUS_FAILOVER_PORT:-6000}
dir=${NIMBUS_FAILOVER_DIR:-/tmp/nimbus-failover-$port}
node_ports=("$((port + 1))" "$((port + 2))")
pg_bin=/usr/lib/postgresql/15/bin

# pg_autoctl keeps each node's configuration and state under XDG_CONFIG_HOME and XDG_DATA_HOME:
# inside the cluster's directory, so that `stop` removes every trace and a new `start` begins
# afresh.
as_postgres() {
  local env=(env PATH="$pg_bin:$PATH" XDG_CONFIG_HOME="$dir/config" XDG_DATA_HOME="$dir/data")
  if [ "$(id -un)" = postgres ]; then
    "${env[@]}" "$@"
  elif [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "${env[@]}" "$@"
  else
    sudo -u postgres "${env[@]}" "$@"
  fi
}

install_if_missing() {
  command -v pg_autoctl >/dev/null 2>&1 && return
  echo "installing pg_auto_failover (postgresql-15-auto-failover)" >&2
  if [ "$(id -u)" -eq 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15-auto-failover >/dev/null
  else
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15-auto-failover >/dev/null
  fi
}

# The state of both nodes, one line each: "<port> <reported state> <assigned state>". Written in
# one piece, so that a reader which stops at the line it wants (grep -q) cannot break the pipe
# between two lines, even where Python's output is unbuffered (PYTHONUNBUFFERED).
states() {
  as_postgres pg_autoctl show state --pgdata "$dir/monitor" --json 2>/dev/null |
    python3 -c '
import json, sys
lines = [
    "%s %s %s\n" % (node["nodeport"], node["current_group_state"], node["assigned_group_state"])
    for node in json.load(sys.stdin)
]
sys.stdout.write("".join(lines))
'
}

# Waits (up to $2 seconds) until the two nodes are a settled primary and secondary.
wait_settled() {
  local what=$1 limit=$2 start=$SECONDS
  while true; do
    local now
    now=$(states || true)
    if [ "$(echo "$now" | awk '$2 == $3 && ($2 == "primary" || $2 == "secondary")' | wc -l)" -eq 2 ] &&
       echo "$now" | grep -q " primary primary" && echo "$now" | grep -q " secondary secondary"; then
      return 0
    fi
    if [ $((SECONDS - start)) -gt "$limit" ]; then
      echo "timed out after ${limit}s waiting until $what; states: $now" >&2
      return 1
    fi
    sleep 1
  done
}

# awk reads every line rather than exiting at the first match: a reader that leaves early breaks
# the writer's pipe, and under `pipefail` that fails the whole command.
primary_port() {
  states | awk '$2 == "primary" && !found {print $1; found = 1}'
}

case "${1:-}" in
  start)
    install_if_missing
    mkdir -p "$dir"
    chown postgres: "$dir" 2>/dev/null || true
    monitor="postgres://autoctl_node@127.0.0.1:$port/pg_auto_failover?sslmode=disable"
    as_postgres pg_autoctl create monitor --pgdata "$dir/monitor" --pgport "$port" \
      --hostname 127.0.0.1 --auth trust --no-ssl --pgctl "$pg_bin/pg_ctl" \
      >"$dir/monitor.log" 2>&1
    as_postgres nohup pg_autoctl run --pgdata "$dir/monitor" >>"$dir/monitor.log" 2>&1 &
    start=$SECONDS
    until "$pg_bin/pg_isready" -q -h 127.0.0.1 -p "$port"; do
      if [ $((SECONDS - start)) -gt 120 ]; then
        echo "the monitor did not accept connections within 120s; see $dir/monitor.log" >&2
        exit 1
      fi
      sleep 1
    done
    for i in 0 1; do
      node="$dir/node$((i + 1))"
      as_postgres nohup pg_autoctl create postgres --pgdata "$node" --pgport "${node_ports[$i]}" \
        --hostname 127.0.0.1 --auth trust --no-ssl --pgctl "$pg_bin/pg_ctl" \
        --monitor "$monitor" --name "node$((i + 1))" --run >"$node.log" 2>&1 &
      # The second node clones the first: start it once the first is the primary.
      if [ "$i" -eq 0 ]; then
        start=$SECONDS
        until states 2>/dev/null | grep -q " single single"; do
          if [ $((SECONDS - start)) -gt 180 ]; then
            echo "the first node did not come up within 180s; see $node.log" >&2
            exit 1
          fi
          sleep 1
        done
      fi
    done
    wait_settled "a primary and a secondary run" 300
    echo "postgres://postgres@127.0.0.1:${node_ports[0]},127.0.0.1:${node_ports[1]}/postgres?target_session_attrs=read-write&connect_timeout=5"
    ;;
  failover)
    before=$(primary_port)
    as_postgres pg_autoctl perform failover --pgdata "$dir/monitor" >>"$dir/failover.log" 2>&1
    wait_settled "the standby is the primary" 300
    after=$(primary_port)
    if [ "$before" = "$after" ]; then
      echo "the primary is still on port $after after the failover" >&2
      exit 1
    fi
    echo "$after"
    ;;
  primary)
    primary_port
    ;;
  stop)
    for node in "$dir/node1" "$dir/node2" "$dir/monitor"; do
      [ -d "$node" ] && as_postgres pg_autoctl stop --pgdata "$node" --immediate >/dev/null 2>&1 || true
    done
    sleep 1
    pkill -u postgres -f "pg_autoctl.*$dir" 2>/dev/null || true
    for node in "$dir/node1" "$dir/node2" "$dir/monitor"; do
      [ -d "$node" ] && as_postgres "$pg_bin/pg_ctl" -D "$node" stop -m immediate >/dev/null 2>&1 || true
    done
    rm -rf "$dir"
    ;;
  *)
    echo "usage: $0 start|failover|primary|stop" >&2
    exit 2
    ;;
esac
