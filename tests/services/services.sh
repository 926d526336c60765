#!/usr/bin/env bash
# The real services the tests run against, on loopback: an Apache Kafka broker and a 3-broker
# Kafka cluster (KRaft), Debian's clickhouse-server alone and as a 2 x 2 cluster, the
# ZooKeeper the ClickHouse cluster coordinates through, and a Prometheus Alertmanager (built from
# its Go module, see alertmanager.sh).
#
#   services.sh start [NAME...]    start what is not yet running (all by default), in parallel,
#                                  and wait until each is ready; prints the time each took
#   services.sh stop [NAME...]     stop what this run directory's PID files name
#   services.sh status [NAME...]   exit 0 when all of them run
#   services.sh env [NAME...]      their addresses, as shell assignments
#   services.sh list               the service names
#
# A service NAME is the script NAME.sh beside this one, answering start|stop|status|env; its
# `env` prints ROCEWATCH_TEST_<NAME> (upper case, - as _) and whatever else its tests need. To add
# a service, write its script and add its name to SERVICES (and to AFTER if it needs another one
# running first). One run directory (ROCEWATCH_SERVICES_DIR, default var/services) holds the
# configs, data, logs and PID files; see each script for its ports.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)

SERVICES=(clickhouse kafka zookeeper clickhouse-cluster kafka-cluster alertmanager)
# what must run before a service starts
declare -A AFTER=([clickhouse-cluster]=zookeeper)

which_services() {
  (($#)) || { echo "${SERVICES[@]}"; return; }
  local s known
  for s in "$@"; do
    for known in "${SERVICES[@]}"; do [[ $s == "$known" ]] && continue 2; done
    echo "unknown service $s (${SERVICES[*]})" >&2
    exit 2
  done
  echo "$@"
}

# timed NAME: start one service and say how long it took
timed() {
  local t0=$EPOCHREALTIME
  "$HERE/$1.sh" start || { echo "$1 did not start" >&2; return 1; }
  awk -v s="$1" -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%s ready in %.1f s\n", s, b - a }'
}

# chain NAME...: start services one after the other (a service and those that need it)
chain() {
  local s
  for s in "$@"; do timed "$s" || return 1; done
}

start() {
  local wanted s root t0=$EPOCHREALTIME pid rc=0
  read -ra wanted <<<"$(which_services "$@")"
  declare -A chains=()
  for s in "${wanted[@]}"; do
    root=${AFTER[$s]:-$s}
    if [[ $root == "$s" ]]; then
      chains[$s]="$s ${chains[$s]:-}"
    else
      chains[$root]="${chains[$root]:-$root} $s"
    fi
  done
  local pids=()
  for root in "${!chains[@]}"; do
    # shellcheck disable=SC2086 # a chain is a list of names
    chain $(printf '%s\n' ${chains[$root]} | awk '!seen[$0]++') &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
  awk -v a="$t0" -v b="$EPOCHREALTIME" -v rc="$rc" \
    'BEGIN { printf "services %s in %.1f s\n", rc ? "FAILED" : "ready", b - a }'
  return $rc
}

cmd=${1:-}
shift || true
case $cmd in
  start) start "$@" ;;
  stop)
    # in parallel, those that others need last
    needed=" ${AFTER[*]} "
    stop_one() { "$HERE/$1.sh" stop; }
    first=() last=()
    for s in $(which_services "$@"); do
      if [[ $needed == *" $s "* ]]; then last+=("$s"); else first+=("$s"); fi
    done
    source "$HERE/proc.sh"
    in_parallel stop_one "${first[@]}" && in_parallel stop_one "${last[@]}"
    ;;
  status)
    rc=0
    for s in $(which_services "$@"); do "$HERE/$s.sh" status || rc=3; done
    exit $rc
    ;;
  env)
    for s in $(which_services "$@"); do "$HERE/$s.sh" env; done
    ;;
  list) echo "${SERVICES[@]}" ;;
  *) echo "usage: $0 start|stop|status|env [NAME...] | list" >&2; exit 2 ;;
esac
