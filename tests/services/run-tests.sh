#!/usr/bin/env bash
# Run the test suite against real services: start every service of services.sh (a Kafka broker
# and a 3-broker Kafka cluster, a ClickHouse server and a 2 x 2 ClickHouse cluster with its
# ZooKeeper) on free loopback ports in a run directory of their own, all at once and once per
# run; export their addresses; run pytest with the given arguments; stop what was started (also
# on Ctrl-C); exit with pytest's code.
#
#   tests/services/run-tests.sh [pytest args]
#
# A service whose address is already set (ROCEWATCH_TEST_<NAME>, e.g. ROCEWATCH_TEST_KAFKA from
# services-dev.env) is used as it is and not started; ROCEWATCH_TEST_SERVICES="kafka clickhouse"
# starts only those. Installs only what is missing: the virtualenv (make venv), Debian's
# clickhouse-server, the Java services' jars (Maven, cached under .cache/). In CI (CI=true) a
# service that cannot start is a failure; elsewhere the tests that need it skip and say why.
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

# the services this run starts: those asked for whose address is not set already
address_var() { local v=${1^^}; echo "ROCEWATCH_TEST_${v//-/_}"; }
wanted=()
for service in ${ROCEWATCH_TEST_SERVICES:-$("$HERE/services.sh" list)}; do
  var=$(address_var "$service")
  [[ -n ${!var:-} ]] || wanted+=("$service")
done

started=""
cleanup() {
  if [[ -n $started ]]; then
    "$HERE/services.sh" stop "${wanted[@]}" >/dev/null || true
    rm -rf "$ROCEWATCH_SERVICES_DIR"
  fi
}

if ((${#wanted[@]})); then
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
  "$HERE/services.sh" start "${wanted[@]}"
  for service in "${wanted[@]}"; do
    if "$HERE/$service.sh" status >/dev/null 2>&1; then
      while IFS= read -r assignment; do export "${assignment?}"; done < <("$HERE/$service.sh" env)
    elif is_ci; then
      echo "run-tests.sh: $service did not start, and CI needs it" >&2
      exit 1
    else
      echo "run-tests.sh: $service did not start; the tests that need it will skip" >&2
    fi
  done
fi

# the slowest tests last in the output: the suite has a 30-minute budget on 2 cores
.venv/bin/pytest --durations=25 "$@"
exit $?
