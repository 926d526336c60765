#!/usr/bin/env bash
# Debian's clickhouse-server (18.16) for the tests, with a config and data directory of its own.
# Alone it is the single test server; clickhouse-cluster.sh runs four of it as one cluster (it
# puts each node's cluster settings in the node's config.d/, which the server merges).
#
#   clickhouse.sh start     write the config, start the server, wait until /ping answers
#   clickhouse.sh stop      stop the server this directory's PID file names
#   clickhouse.sh status    exit 0 when it runs
#   clickhouse.sh env       its address, as a shell assignment
#
# Environment: ROCEWATCH_SERVICES_DIR (run directory, default var/services),
# CLICKHOUSE_TCP_PORT (19000), CLICKHOUSE_HTTP_PORT (18123), CLICKHOUSE_INTERSERVER_PORT (19009),
# CLICKHOUSE_NAME (its run subdirectory, default clickhouse).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
source "$HERE/proc.sh"

CLICKHOUSE_NAME=${CLICKHOUSE_NAME:-clickhouse}
RUN=${ROCEWATCH_SERVICES_DIR:-$REPO/var/services}/$CLICKHOUSE_NAME
# ports not given are the ones this run directory's last start used, else the defaults
recorded() { [[ -s $RUN/ports.env ]] && sed -n "s/^$1=//p" "$RUN/ports.env"; }
CLICKHOUSE_TCP_PORT=${CLICKHOUSE_TCP_PORT:-$(recorded CLICKHOUSE_TCP_PORT || true)}
CLICKHOUSE_HTTP_PORT=${CLICKHOUSE_HTTP_PORT:-$(recorded CLICKHOUSE_HTTP_PORT || true)}
CLICKHOUSE_INTERSERVER_PORT=${CLICKHOUSE_INTERSERVER_PORT:-$(recorded CLICKHOUSE_INTERSERVER_PORT || true)}
CLICKHOUSE_TCP_PORT=${CLICKHOUSE_TCP_PORT:-19000}
CLICKHOUSE_HTTP_PORT=${CLICKHOUSE_HTTP_PORT:-18123}
CLICKHOUSE_INTERSERVER_PORT=${CLICKHOUSE_INTERSERVER_PORT:-19009}
PIDFILE=$RUN/clickhouse.pid
SERVER=${CLICKHOUSE_SERVER:-$(command -v clickhouse-server || echo /usr/sbin/clickhouse-server)}

write_config() {
  mkdir -p "$RUN"/{data,tmp,user_files,format_schemas,log}
  printf '%s\n' "CLICKHOUSE_TCP_PORT=$CLICKHOUSE_TCP_PORT" "CLICKHOUSE_HTTP_PORT=$CLICKHOUSE_HTTP_PORT" \
    "CLICKHOUSE_INTERSERVER_PORT=$CLICKHOUSE_INTERSERVER_PORT" >"$RUN/ports.env"
  cat >"$RUN/config.xml" <<CONF
<?xml version="1.0"?>
<yandex>
  <logger>
    <level>information</level>
    <log>$RUN/log/server.log</log>
    <errorlog>$RUN/log/server.err.log</errorlog>
    <size>100M</size>
    <count>2</count>
  </logger>
  <listen_host>127.0.0.1</listen_host>
  <tcp_port>$CLICKHOUSE_TCP_PORT</tcp_port>
  <http_port>$CLICKHOUSE_HTTP_PORT</http_port>
  <interserver_http_port>$CLICKHOUSE_INTERSERVER_PORT</interserver_http_port>
  <interserver_http_host>127.0.0.1</interserver_http_host>
  <path>$RUN/data/</path>
  <tmp_path>$RUN/tmp/</tmp_path>
  <user_files_path>$RUN/user_files/</user_files_path>
  <format_schema_path>$RUN/format_schemas/</format_schema_path>
  <users_config>$RUN/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <timezone>UTC</timezone>
  <max_concurrent_queries>100</max_concurrent_queries>
  <mark_cache_size>268435456</mark_cache_size>
  <uncompressed_cache_size>268435456</uncompressed_cache_size>
  <remote_servers>
    <!-- one shard, one replica: lets the tests run Distributed tables on a single server -->
    <rocewatch_test>
      <shard><replica><host>127.0.0.1</host><port>$CLICKHOUSE_TCP_PORT</port></replica></shard>
    </rocewatch_test>
  </remote_servers>
</yandex>
CONF
  cat >"$RUN/users.xml" <<'CONF'
<?xml version="1.0"?>
<yandex>
  <profiles>
    <default>
      <max_memory_usage>4000000000</max_memory_usage>
    </default>
  </profiles>
  <users>
    <default>
      <password></password>
      <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
      <profile>default</profile>
      <quota>default</quota>
    </default>
  </users>
  <quotas>
    <default>
      <interval>
        <duration>3600</duration><queries>0</queries><errors>0</errors>
        <result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time>
      </interval>
    </default>
  </quotas>
</yandex>
CONF
}

ready() {
  kill -0 "$(<"$PIDFILE")" 2>/dev/null || {
    echo "$CLICKHOUSE_NAME: clickhouse-server exited during start-up" >&2
    exit 1
  }
  curl -sf "http://127.0.0.1:$CLICKHOUSE_HTTP_PORT/ping" 2>/dev/null | grep -q Ok
}

start() {
  if pid_alive "$PIDFILE" "$RUN/"; then
    echo "$CLICKHOUSE_NAME already running (pid $(<"$PIDFILE")) on 127.0.0.1:$CLICKHOUSE_TCP_PORT"
    return 0
  fi
  [[ -x $SERVER ]] || {
    echo "clickhouse.sh: clickhouse-server is not installed (apt-get install clickhouse-server)" >&2
    exit 1
  }
  for port in "$CLICKHOUSE_TCP_PORT" "$CLICKHOUSE_HTTP_PORT"; do
    if port_open "$port"; then
      echo "clickhouse.sh: 127.0.0.1:$port is taken by another process" >&2
      exit 1
    fi
  done
  write_config
  # in the foreground of its own session (no --daemon): its PID is the one we record
  setsid "$SERVER" --config-file="$RUN/config.xml" >"$RUN/log/stdout.log" 2>&1 </dev/null &
  echo $! >"$PIDFILE"
  if ! wait_for 60 "$CLICKHOUSE_NAME on 127.0.0.1:$CLICKHOUSE_HTTP_PORT" ready; then
    tail -20 "$RUN/log/server.err.log" "$RUN/log/stdout.log" >&2 || true
    stop_pid "$PIDFILE" "$RUN/" "$CLICKHOUSE_NAME"
    exit 1
  fi
  echo "$CLICKHOUSE_NAME $(curl -sf "http://127.0.0.1:$CLICKHOUSE_HTTP_PORT/?query=SELECT%20version()")" \
    "running (pid $(<"$PIDFILE")) on 127.0.0.1:$CLICKHOUSE_TCP_PORT"
}

case ${1:-} in
  start) start ;;
  stop) stop_pid "$PIDFILE" "$RUN/" "$CLICKHOUSE_NAME" ;;
  status)
    if pid_alive "$PIDFILE" "$RUN/"; then
      echo "$CLICKHOUSE_NAME running (pid $(<"$PIDFILE")) on 127.0.0.1:$CLICKHOUSE_TCP_PORT"
    else
      echo "$CLICKHOUSE_NAME not running"
      exit 3
    fi
    ;;
  env) echo "ROCEWATCH_TEST_CLICKHOUSE=127.0.0.1:$CLICKHOUSE_TCP_PORT" ;;
  *) echo "usage: $0 start|stop|status|env" >&2; exit 2 ;;
esac
