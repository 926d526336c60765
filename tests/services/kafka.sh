#!/usr/bin/env bash
# An Apache Kafka broker for the tests: KRaft combined mode (broker + controller), loopback only.
# Alone it is the single test broker; kafka-cluster.sh runs three of it as one cluster.
#
#   kafka.sh fetch     fetch the jars with Maven into .cache/ and record a class-data archive of
#                      a broker's start (once; later runs reuse both)
#   kafka.sh start     format the log dir (first start only), start, wait until it serves
#   kafka.sh stop      stop the broker this directory's PID file names (SIGTERM, then SIGKILL)
#   kafka.sh status    exit 0 when it runs
#   kafka.sh env       its address, as a shell assignment
#
# Environment: ROCEWATCH_SERVICES_DIR (run directory, default var/services), KAFKA_PORT (19092),
# KAFKA_CONTROLLER_PORT (19093), KAFKA_VERSION (4.1.1), KAFKA_HEAP (512m); for a cluster's node:
# KAFKA_NAME (its run subdirectory, default kafka), KAFKA_NODE_ID (1), KAFKA_VOTERS (the
# controller quorum, id@host:port,...; default this node alone), KAFKA_REPLICATION (of the internal
# topics, 1), KAFKA_MIN_ISR (the topics' min.insync.replicas, 1), KAFKA_JVM_OPTS (more JVM flags).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
source "$HERE/proc.sh"
source "$HERE/maven.sh"

KAFKA_VERSION=${KAFKA_VERSION:-4.1.1}
LOG4J_VERSION=${LOG4J_VERSION:-2.24.3}
KAFKA_NAME=${KAFKA_NAME:-kafka}
RUN=${ROCEWATCH_SERVICES_DIR:-$REPO/var/services}/$KAFKA_NAME
# ports not given are the ones this run directory's last start used, else the defaults
recorded() { [[ -s $RUN/ports.env ]] && sed -n "s/^$1=//p" "$RUN/ports.env"; }
KAFKA_PORT=${KAFKA_PORT:-$(recorded KAFKA_PORT || true)}
KAFKA_CONTROLLER_PORT=${KAFKA_CONTROLLER_PORT:-$(recorded KAFKA_CONTROLLER_PORT || true)}
KAFKA_PORT=${KAFKA_PORT:-19092}
KAFKA_CONTROLLER_PORT=${KAFKA_CONTROLLER_PORT:-19093}
KAFKA_HEAP=${KAFKA_HEAP:-512m}
KAFKA_NODE_ID=${KAFKA_NODE_ID:-1}
KAFKA_VOTERS=${KAFKA_VOTERS:-$KAFKA_NODE_ID@127.0.0.1:$KAFKA_CONTROLLER_PORT}
KAFKA_REPLICATION=${KAFKA_REPLICATION:-1}
KAFKA_MIN_ISR=${KAFKA_MIN_ISR:-1}
CACHE=${ROCEWATCH_CACHE_DIR:-$REPO/.cache}
LIBS=$CACHE/kafka-$KAFKA_VERSION/libs
PIDFILE=$RUN/kafka.pid
# the classes a broker loads at start, archived once (JDK class-data sharing): a broker then
# starts on about half the CPU, which on a shared 2-core machine is most of its start-up time
CDS=$CACHE/kafka-$KAFKA_VERSION/broker.jsa

fetch() {
  maven_fetch "$HERE/kafka-pom.xml" "$LIBS" "Apache Kafka $KAFKA_VERSION" \
    "@KAFKA_VERSION@=$KAFKA_VERSION" "@LOG4J_VERSION@=$LOG4J_VERSION" || exit 1
  [[ -n ${KAFKA_CDS_DUMP:-} || -s $CDS ]] || record_cds
}

# record_cds: start and stop a throwaway broker that archives the classes it loaded into $CDS
# (an optimisation: when it fails, brokers start without it)
record_cds() {
  local lock tmp ports
  exec {lock}>"$CACHE/.kafka-cds.lock"
  flock "$lock"
  if [[ ! -s $CDS ]]; then
    echo "recording the Kafka broker's class-data archive (once) ..."
    tmp=$(mktemp -d "$CACHE/kafka-cds.XXXXXX")
    mapfile -t ports < <(free_ports 2)
    if ROCEWATCH_SERVICES_DIR=$tmp KAFKA_NAME=cds KAFKA_PORT=${ports[0]} \
      KAFKA_CONTROLLER_PORT=${ports[1]} KAFKA_NODE_ID=1 KAFKA_VOTERS= KAFKA_REPLICATION=1 \
      KAFKA_JVM_OPTS= KAFKA_CDS_DUMP=$tmp/broker.jsa "$HERE/kafka.sh" start >/dev/null; then
      ROCEWATCH_SERVICES_DIR=$tmp KAFKA_NAME=cds "$HERE/kafka.sh" stop >/dev/null || true
    fi
    if [[ -s $tmp/broker.jsa ]]; then
      mv "$tmp/broker.jsa" "$CDS"
    else
      echo "kafka.sh: no class-data archive recorded (brokers start without it)" >&2
    fi
    rm -rf "$tmp"
  fi
  exec {lock}>&-
}

# cds_flags: this JVM's flags for class-data sharing (record the archive, or use it)
cds_flags() {
  if [[ -n ${KAFKA_CDS_DUMP:-} ]]; then
    echo "-XX:ArchiveClassesAtExit=$KAFKA_CDS_DUMP"
  elif [[ -s $CDS ]]; then
    echo "-XX:SharedArchiveFile=$CDS"
  fi
}

write_config() {
  mkdir -p "$RUN/data" "$RUN/log"
  printf '%s\n' "KAFKA_PORT=$KAFKA_PORT" "KAFKA_CONTROLLER_PORT=$KAFKA_CONTROLLER_PORT" \
    >"$RUN/ports.env"
  cat >"$RUN/server.properties" <<CONF
process.roles=broker,controller
node.id=$KAFKA_NODE_ID
controller.quorum.voters=$KAFKA_VOTERS
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$RUN/data
auto.create.topics.enable=false
num.partitions=1
min.insync.replicas=$KAFKA_MIN_ISR
offsets.topic.replication.factor=$KAFKA_REPLICATION
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=$KAFKA_REPLICATION
transaction.state.log.min.isr=$((KAFKA_REPLICATION > 1 ? 2 : 1))
share.coordinator.state.topic.replication.factor=$KAFKA_REPLICATION
share.coordinator.state.topic.min.isr=$((KAFKA_REPLICATION > 1 ? 2 : 1))
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
  if pid_alive "$PIDFILE" "$RUN/"; then
    echo "$KAFKA_NAME already running (pid $(<"$PIDFILE")) on 127.0.0.1:$KAFKA_PORT"
    return 0
  fi
  fetch
  write_config
  if [[ ! -f $RUN/data/meta.properties ]]; then
    # shellcheck disable=SC2046 # the flags are words
    java $(cds_flags) -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -cp "$(classpath)" \
      -Dlog4j2.configurationFile="$HERE/log4j2.properties" \
      -Drocewatch.log.dir="$RUN/log/format" kafka.tools.StorageTool format \
      --config "$RUN/server.properties" --cluster-id "rocewatch-test-0000000" \
      >"$RUN/log/format.log" 2>&1 || { cat "$RUN/log/format.log" >&2; exit 1; }
  fi
  if port_open "$KAFKA_PORT"; then
    echo "kafka.sh: 127.0.0.1:$KAFKA_PORT is taken by another process" >&2
    exit 1
  fi
  [[ -f $RUN/log/server.log ]] && mv -f "$RUN/log/server.log" "$RUN/log/server.log.1"
  # setsid: the broker outlives this script and is not hit by the terminal's Ctrl-C
  # shellcheck disable=SC2046,SC2086 # the flags are words
  setsid java $(cds_flags) ${KAFKA_JVM_OPTS:-} -Xms128m -Xmx"$KAFKA_HEAP" -XX:+UseG1GC \
    -XX:MaxGCPauseMillis=20 \
    -Djava.awt.headless=true -Dlog4j2.configurationFile="$HERE/log4j2.properties" \
    -Drocewatch.log.dir="$RUN/log" -cp "$(classpath)" kafka.Kafka "$RUN/server.properties" \
    >"$RUN/log/stdout.log" 2>&1 </dev/null &
  echo $! >"$PIDFILE"
  if ! wait_for 90 "kafka on 127.0.0.1:$KAFKA_PORT" ready; then
    tail -20 "$RUN/log/server.log" "$RUN/log/stdout.log" >&2 || true
    stop_pid "$PIDFILE" "$RUN/" "$KAFKA_NAME"
    exit 1
  fi
  echo "$KAFKA_NAME $KAFKA_VERSION running (pid $(<"$PIDFILE")) on 127.0.0.1:$KAFKA_PORT"
}

ready() {
  # kill -0, not pid_alive: right after the fork the command line is still this script's
  kill -0 "$(<"$PIDFILE")" 2>/dev/null || { echo "$KAFKA_NAME exited during start-up" >&2; exit 1; }
  port_open "$KAFKA_PORT" && grep -q "Kafka Server started" "$RUN/log/server.log" 2>/dev/null
}

case ${1:-} in
  fetch) fetch ;;
  start) start ;;
  stop) stop_pid "$PIDFILE" "$RUN/" "$KAFKA_NAME" ;;
  status)
    if pid_alive "$PIDFILE" "$RUN/"; then
      echo "$KAFKA_NAME running (pid $(<"$PIDFILE")) on 127.0.0.1:$KAFKA_PORT"
    else
      echo "$KAFKA_NAME not running"
      exit 3
    fi
    ;;
  env) echo "ROCEWATCH_TEST_KAFKA=127.0.0.1:$KAFKA_PORT" ;;
  *) echo "usage: $0 fetch|start|stop|status|env" >&2; exit 2 ;;
esac
