#!/usr/bin/env bash
# Run the test suite against real services: start a Kafka broker and a ClickHouse server on free
# loopback ports in a run directory of their own, export their addresses, run pytest with the
# given arguments, stop what was started (also on Ctrl-C), and exit with pytest's code.
#
#   tests/services/run-tests.sh [pytest args]
#
# With ROCEWATCH_TEST_KAFKA and ROCEWATCH_TEST_CLICKHOUSE already set, those services are used and
# nothing is started. Installs only what is missing: the virtualenv (make venv), Debian's
# clickhouse-server, the Kafka jars (Maven, cached under .cache/). In CI (CI=true) a service that
# cannot start is a failure; elsewhere the tests that need it skip and say why.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
cd "$REPO"
source "$HERE/proc.sh"

is_ci() { [[ ${CI:-} == true || ${CI:-} == 1 ]]; }

[[ -x .venv/bin/pytest ]] || make venv || exit 1
PYTHON=.venv/bin/python

if ! command -v clickhouse-server >/dev/null && [[ ! -x /usr/sbin/clickhouse-server ]]; then
  echo "installing clickhouse-server (apt) ..."
  export DEBIAN_FRONTEND=noninteractive
  { apt-get install -y -q clickhouse-server clickhouse-client >/dev/null ||
    { apt-get update -q >/dev/null && apt-get install -y -q clickhouse-server clickhouse-client >/dev/null; }; } ||
    echo "could not install clickhouse-server" >&2
fi

started=""
cleanup() {
  if [[ -n $started ]]; then
    "$HERE/services.sh" stop >/dev/null || true
    rm -rf "$ROCEWATCH_SERVICES_DIR"
  fi
}

if [[ -z ${ROCEWATCH_TEST_KAFKA:-} || -z ${ROCEWATCH_TEST_CLICKHOUSE:-} ]]; then
  # a run directory and ports of this run's own: several runs may share the machine
  export ROCEWATCH_SERVICES_DIR=$REPO/var/services/test-$$
  export KAFKA_PORT=${KAFKA_PORT:-$(free_port)}
  export KAFKA_CONTROLLER_PORT=${KAFKA_CONTROLLER_PORT:-$(free_port)}
  export CLICKHOUSE_TCP_PORT=${CLICKHOUSE_TCP_PORT:-$(free_port)}
  export CLICKHOUSE_HTTP_PORT=${CLICKHOUSE_HTTP_PORT:-$(free_port)}
  export CLICKHOUSE_INTERSERVER_PORT=${CLICKHOUSE_INTERSERVER_PORT:-$(free_port)}
  started=yes
  trap cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  for service in clickhouse kafka; do
    if "$HERE/services.sh" start "$service"; then
      case $service in
        kafka) export ROCEWATCH_TEST_KAFKA=127.0.0.1:$KAFKA_PORT ;;
        clickhouse) export ROCEWATCH_TEST_CLICKHOUSE=127.0.0.1:$CLICKHOUSE_TCP_PORT ;;
      esac
    elif is_ci; then
      echo "run-tests.sh: $service did not start, and CI needs it" >&2
      exit 1
    else
      echo "run-tests.sh: $service did not start; the tests that need it will skip" >&2
    fi
  done
fi

.venv/bin/pytest "$@"
exit $?
