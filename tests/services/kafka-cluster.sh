#!/usr/bin/env bash
# A Kafka cluster for the tests: three KRaft brokers on loopback, each also a controller (a quorum
# of three survives the loss of one), each with its own config, data and ports (kafka.sh runs
# each one). Internal topics are replicated 3 times and topics default to min.insync.replicas=2,
# so a producer's acks=all survives one broker down.
#
#   kafka-cluster.sh start             start every broker (in parallel), wait until all serve
#   kafka-cluster.sh stop              stop every broker
#   kafka-cluster.sh status            exit 0 when every broker runs
#   kafka-cluster.sh env               the bootstrap addresses
#   kafka-cluster.sh nodes             the broker names
#   kafka-cluster.sh pid NODE          a broker's PID (a failover test kills it by this PID)
#   kafka-cluster.sh start-node NODE   (re)start one broker, with the ports it had
#   kafka-cluster.sh stop-node NODE    stop one broker
#
# Brokers are b1, b2, b3 (node ids 1-3). Ports are picked free on the first start and kept in each
# broker's node.env under ROCEWATCH_SERVICES_DIR/kafka-cluster/.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
source "$HERE/proc.sh"
source "$HERE/cluster.sh"

RUN=${ROCEWATCH_SERVICES_DIR:-$REPO/var/services}/kafka-cluster
NODES=(b1 b2 b3)
NODE_SCRIPT=$HERE/kafka.sh
NODE_PIDFILE=kafka.pid
KAFKA_CLUSTER_HEAP=${KAFKA_CLUSTER_HEAP:-384m}
# the JIT's first tier only: three brokers starting at once on two cores spend much of their
# start compiling; tests move megabytes, not the gigabytes a tuned broker is for
KAFKA_CLUSTER_JVM_OPTS=${KAFKA_CLUSTER_JVM_OPTS:--XX:TieredStopAtLevel=1}

prepare() {
  "$HERE/kafka.sh" fetch  # once, before the brokers start together
  mkdir -p "$RUN"
  if [[ ! -s $RUN/ports ]]; then free_ports $((2 * ${#NODES[@]})) >"$RUN/ports"; fi
  local ports i voters="" n
  mapfile -t ports <"$RUN/ports"
  for i in "${!NODES[@]}"; do
    voters+="${voters:+,}$((i + 1))@127.0.0.1:${ports[$((2 * i + 1))]}"
  done
  for i in "${!NODES[@]}"; do
    n=${NODES[$i]}
    mkdir -p "$RUN/$n"
    cat >"$(node_env "$n")" <<ENV
KAFKA_NAME=kafka-cluster/$n
KAFKA_NODE_ID=$((i + 1))
KAFKA_PORT=${ports[$((2 * i))]}
KAFKA_CONTROLLER_PORT=${ports[$((2 * i + 1))]}
KAFKA_VOTERS=$voters
KAFKA_REPLICATION=${#NODES[@]}
KAFKA_MIN_ISR=2
KAFKA_HEAP=$KAFKA_CLUSTER_HEAP
KAFKA_JVM_OPTS="$KAFKA_CLUSTER_JVM_OPTS"
ENV
  done
}

env_lines() {
  local n addresses=()
  for n in "${NODES[@]}"; do addresses+=("127.0.0.1:$(node_var "$n" KAFKA_PORT)"); done
  echo "ROCEWATCH_TEST_KAFKA_CLUSTER=$(IFS=,; echo "${addresses[*]}")"
}

cluster_main "$@"
