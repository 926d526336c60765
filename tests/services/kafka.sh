#!/usr/bin/env bash
# An Apache Kafka broker for the tests: KRaft combined mode (broker + controller), loopback only.
#
#   kafka.sh fetch     fetch the jars with Maven into .cache/ (once; later runs reuse them)
#   kafka.sh start     format the log dir (first start only), start, wait until it serves
#   kafka.sh stop      stop the broker this directory's PID file names (SIGTERM, then SIGKILL)
#   kafka.sh status    exit 0 when it runs
#
# Environment: ROCEWATCH_SERVICES_DIR (run directory, default var/services), KAFKA_PORT (19092),
# KAFKA_CONTROLLER_PORT (19093), KAFKA_VERSION (4.1.1), KAFKA_HEAP (512m).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
source "$HERE/proc.sh"

KAFKA_VERSION=${KAFKA_VERSION:-4.1.1}
LOG4J_VERSION=${LOG4J_VERSION:-2.24.3}
KAFKA_PORT=${KAFKA_PORT:-19092}
KAFKA_CONTROLLER_PORT=${KAFKA_CONTROLLER_PORT:-19093}
KAFKA_HEAP=${KAFKA_HEAP:-512m}
CACHE=${ROCEWATCH_CACHE_DIR:-$REPO/.cache}
LIBS=$CACHE/kafka-$KAFKA_VERSION/libs
RUN=${ROCEWATCH_SERVICES_DIR:-$REPO/var/services}/kafka
PIDFILE=$RUN/kafka.pid

fetch() {
  [[ -f $LIBS/.complete ]] && return 0
  command -v mvn >/dev/null || { echo "kafka.sh: Maven (mvn) is needed to fetch the broker" >&2; exit 1; }
  command -v java >/dev/null || { echo "kafka.sh: Java 17+ is needed to run the broker" >&2; exit 1; }
  mkdir -p "$CACHE"
  # one fetch at a time, even when several test runs start together
  exec 9>"$CACHE/.kafka-fetch.lock"
  flock 9
  [[ -f $LIBS/.complete ]] && return 0
  local work
  work=$(mktemp -d "$CACHE/kafka-fetch.XXXXXX")
  sed -e "s/@KAFKA_VERSION@/$KAFKA_VERSION/" -e "s/@LOG4J_VERSION@/$LOG4J_VERSION/" \
    "$HERE/kafka-pom.xml" >"$work/pom.xml"
  echo "fetching Apache Kafka $KAFKA_VERSION with Maven into $LIBS ..."
  (cd "$work" && mvn -q -B -Dmaven.repo.local="$CACHE/m2" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$work/libs") >"$work/mvn.log" 2>&1 || {
    cat "$work/mvn.log" >&2
    echo "kafka.sh: Maven could not fetch org.apache.kafka:kafka_2.13:$KAFKA_VERSION" >&2
    exit 1
  }
  rm -rf "$LIBS"
  mkdir -p "$(dirname "$LIBS")"
  mv "$work/libs" "$LIBS"
  touch "$LIBS/.complete"
  rm -rf "$work"
}

write_config() {
  mkdir -p "$RUN/data" "$RUN/log"
  cat >"$RUN/server.properties" <<CONF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$RUN/data
auto.create.topics.enable=false
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
# a restarted broker re-registers once its old session expired: keep that short
broker.heartbeat.interval.ms=500
broker.session.timeout.ms=2000
log.retention.hours=24
log.segment.bytes=67108864
CONF
}

classpath() {
  echo "$LIBS/*"
}

start() {
  if pid_alive "$PIDFILE" "$RUN"; then
    echo "kafka already running (pid $(<"$PIDFILE")) on 127.0.0.1:$KAFKA_PORT"
    return 0
  fi
  fetch
  write_config
  if [[ ! -f $RUN/data/meta.properties ]]; then
    java -cp "$(classpath)" -Dlog4j2.configurationFile="$HERE/log4j2.properties" \
      -Dkafka.logs.dir="$RUN/log" kafka.tools.StorageTool format \
      --config "$RUN/server.properties" --cluster-id "rocewatch-test-0000000" \
      >"$RUN/log/format.log" 2>&1 || { cat "$RUN/log/format.log" >&2; exit 1; }
  fi
  if port_open "$KAFKA_PORT"; then
    echo "kafka.sh: 127.0.0.1:$KAFKA_PORT is taken by another process" >&2
    exit 1
  fi
  [[ -f $RUN/log/server.log ]] && mv -f "$RUN/log/server.log" "$RUN/log/server.log.1"
  # setsid: the broker outlives this script and is not hit by the terminal's Ctrl-C
  setsid java -Xms128m -Xmx"$KAFKA_HEAP" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
    -Djava.awt.headless=true -Dlog4j2.configurationFile="$HERE/log4j2.properties" \
    -Dkafka.logs.dir="$RUN/log" -cp "$(classpath)" kafka.Kafka "$RUN/server.properties" \
    >"$RUN/log/stdout.log" 2>&1 </dev/null &
  echo $! >"$PIDFILE"
  if ! wait_for 90 "kafka on 127.0.0.1:$KAFKA_PORT" ready; then
    tail -20 "$RUN/log/server.log" "$RUN/log/stdout.log" >&2 || true
    stop_pid "$PIDFILE" "$RUN" kafka
    exit 1
  fi
  echo "kafka $KAFKA_VERSION running (pid $(<"$PIDFILE")) on 127.0.0.1:$KAFKA_PORT"
}

ready() {
  # kill -0, not pid_alive: right after the fork the command line is still this script's
  kill -0 "$(<"$PIDFILE")" 2>/dev/null || { echo "kafka exited during start-up" >&2; exit 1; }
  port_open "$KAFKA_PORT" && grep -q "Kafka Server started" "$RUN/log/server.log" 2>/dev/null
}

case ${1:-} in
  fetch) fetch ;;
  start) start ;;
  stop) stop_pid "$PIDFILE" "$RUN" kafka ;;
  status)
    if pid_alive "$PIDFILE" "$RUN"; then
      echo "kafka running (pid $(<"$PIDFILE")) on 127.0.0.1:$KAFKA_PORT"
    else
      echo "kafka not running"
      exit 3
    fi
    ;;
  *) echo "usage: $0 fetch|start|stop|status" >&2; exit 2 ;;
esac
