#!/usr/bin/env bash
# The real services the tests run against, on loopback: an Apache Kafka broker (KRaft) and
# Debian's clickhouse-server.
#
#   services.sh start [kafka|clickhouse]   start (what is not yet running) and wait for readiness
#   services.sh stop [kafka|clickhouse]    stop what this run directory's PID files name
#   services.sh status [kafka|clickhouse]  exit 0 when all of them run
#   services.sh env                        the addresses, as shell assignments
#
# One run directory (ROCEWATCH_SERVICES_DIR, default var/services) holds the configs, data, logs
# and PID files; ports come from KAFKA_PORT, KAFKA_CONTROLLER_PORT, CLICKHOUSE_TCP_PORT,
# CLICKHOUSE_HTTP_PORT, CLICKHOUSE_INTERSERVER_PORT (see kafka.sh and clickhouse.sh).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)

which_services() {
  case ${1:-all} in
    all) echo "kafka clickhouse" ;;
    kafka | clickhouse) echo "$1" ;;
    *) echo "unknown service $1 (kafka, clickhouse)" >&2; exit 2 ;;
  esac
}

env_lines() {
  echo "ROCEWATCH_TEST_KAFKA=127.0.0.1:${KAFKA_PORT:-19092}"
  echo "ROCEWATCH_TEST_CLICKHOUSE=127.0.0.1:${CLICKHOUSE_TCP_PORT:-19000}"
}

cmd=${1:-}
shift || true
case $cmd in
  start)
    for s in $(which_services "$@"); do
      t0=$EPOCHREALTIME
      "$HERE/$s.sh" start
      awk -v s="$s" -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%s ready in %.1f s\n", s, b - a }'
    done
    ;;
  stop)
    for s in $(which_services "$@"); do "$HERE/$s.sh" stop; done
    ;;
  status)
    rc=0
    for s in $(which_services "$@"); do "$HERE/$s.sh" status || rc=3; done
    exit $rc
    ;;
  env) env_lines ;;
  *) echo "usage: $0 start|stop|status|env [kafka|clickhouse]" >&2; exit 2 ;;
esac
