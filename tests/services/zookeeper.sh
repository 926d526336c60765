#!/usr/bin/env bash
# Apache ZooKeeper for the tests (standalone, loopback only): what the ClickHouse cluster's
# replicated tables and ON CLUSTER DDL coordinate through.
#
#   zookeeper.sh fetch     fetch the jars with Maven into .cache/ (once; later runs reuse them)
#   zookeeper.sh start     write the config, start, wait until it serves
#   zookeeper.sh stop      stop the server this directory's PID file names
#   zookeeper.sh status    exit 0 when it runs
#   zookeeper.sh env       its address, as a shell assignment
#
# Environment: ROCEWATCH_SERVICES_DIR (run directory, default var/services), ZOOKEEPER_PORT
# (a free port on the first start, then the one recorded in the run directory),
# ZOOKEEPER_VERSION (3.9.5), ZOOKEEPER_HEAP (256m).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
source "$HERE/proc.sh"
source "$HERE/maven.sh"

ZOOKEEPER_VERSION=${ZOOKEEPER_VERSION:-3.9.5}
LOG4J_VERSION=${LOG4J_VERSION:-2.24.3}
# libraries ZooKeeper's POM names as provided (the versions its parent POM pins)
DROPWIZARD_VERSION=${DROPWIZARD_VERSION:-4.1.12.1}
SNAPPY_VERSION=${SNAPPY_VERSION:-1.1.10.5}
ZOOKEEPER_HEAP=${ZOOKEEPER_HEAP:-256m}
CACHE=${ROCEWATCH_CACHE_DIR:-$REPO/.cache}
LIBS=$CACHE/zookeeper-$ZOOKEEPER_VERSION/libs
RUN=${ROCEWATCH_SERVICES_DIR:-$REPO/var/services}/zookeeper
PIDFILE=$RUN/zookeeper.pid

# the port: given, or recorded by an earlier start in this run directory, or a free one
if [[ -z ${ZOOKEEPER_PORT:-} && -s $RUN/port ]]; then ZOOKEEPER_PORT=$(<"$RUN/port"); fi

fetch() {
  maven_fetch "$HERE/zookeeper-pom.xml" "$LIBS" "Apache ZooKeeper $ZOOKEEPER_VERSION" \
    "@ZOOKEEPER_VERSION@=$ZOOKEEPER_VERSION" "@DROPWIZARD_VERSION@=$DROPWIZARD_VERSION" \
    "@SNAPPY_VERSION@=$SNAPPY_VERSION" "@LOG4J_VERSION@=$LOG4J_VERSION" || exit 1
}

write_config() {
  mkdir -p "$RUN/data" "$RUN/log"
  echo "$ZOOKEEPER_PORT" >"$RUN/port"
  cat >"$RUN/zoo.cfg" <<CONF
tickTime=500
initLimit=20
syncLimit=10
# sessions of 2-20 s: ClickHouse asks for 30 s and gets the maximum (a killed server's ephemeral
# nodes go soon)
minSessionTimeout=2000
maxSessionTimeout=20000
dataDir=$RUN/data
clientPort=$ZOOKEEPER_PORT
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,mntr
autopurge.purgeInterval=1
CONF
}

# serving: `srvr` names the server's mode only once it serves requests (`ruok` answers imok as
# soon as the port listens, even when loading the database failed)
serving() {
  local answer=""
  exec 3<>"/dev/tcp/127.0.0.1/$ZOOKEEPER_PORT" || return 1
  echo srvr >&3
  answer=$(timeout 2 cat <&3 || true)
  exec 3>&-
  [[ $answer == *"Mode: "* ]]
}

ready() {
  kill -0 "$(<"$PIDFILE")" 2>/dev/null || { echo "zookeeper exited during start-up" >&2; exit 1; }
  serving 2>/dev/null
}

start() {
  if pid_alive "$PIDFILE" "$RUN/"; then
    echo "zookeeper already running (pid $(<"$PIDFILE")) on 127.0.0.1:$ZOOKEEPER_PORT"
    return 0
  fi
  fetch
  ZOOKEEPER_PORT=${ZOOKEEPER_PORT:-$(free_port)}
  if port_open "$ZOOKEEPER_PORT"; then
    echo "zookeeper.sh: 127.0.0.1:$ZOOKEEPER_PORT is taken by another process" >&2
    exit 1
  fi
  write_config
  [[ -f $RUN/log/server.log ]] && mv -f "$RUN/log/server.log" "$RUN/log/server.log.1"
  setsid java -Xms64m -Xmx"$ZOOKEEPER_HEAP" -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
    -Djava.awt.headless=true -Dzookeeper.jmx.log4j.disable=true \
    -Dlog4j2.configurationFile="$HERE/log4j2.properties" -Drocewatch.log.dir="$RUN/log" \
    -cp "$LIBS/*" org.apache.zookeeper.server.ZooKeeperServerMain "$RUN/zoo.cfg" \
    >"$RUN/log/stdout.log" 2>&1 </dev/null &
  echo $! >"$PIDFILE"
  if ! wait_for 60 "zookeeper on 127.0.0.1:$ZOOKEEPER_PORT" ready; then
    tail -20 "$RUN/log/server.log" "$RUN/log/stdout.log" >&2 || true
    stop_pid "$PIDFILE" "$RUN/" zookeeper
    exit 1
  fi
  echo "zookeeper $ZOOKEEPER_VERSION running (pid $(<"$PIDFILE")) on 127.0.0.1:$ZOOKEEPER_PORT"
}

case ${1:-} in
  fetch) fetch ;;
  start) start ;;
  stop) stop_pid "$PIDFILE" "$RUN/" zookeeper ;;
  status)
    if pid_alive "$PIDFILE" "$RUN/"; then
      echo "zookeeper running (pid $(<"$PIDFILE")) on 127.0.0.1:$ZOOKEEPER_PORT"
    else
      echo "zookeeper not running"
      exit 3
    fi
    ;;
  env) echo "ROCEWATCH_TEST_ZOOKEEPER=127.0.0.1:${ZOOKEEPER_PORT:?zookeeper has not been started}" ;;
  *) echo "usage: $0 fetch|start|stop|status|env" >&2; exit 2 ;;
esac
