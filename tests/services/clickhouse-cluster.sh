#!/usr/bin/env bash
# A ClickHouse cluster for the tests: 2 shards x 2 replicas, four Debian clickhouse-server (18.16)
# processes on loopback, each with its own config, data and ports (clickhouse.sh runs each one),
# coordinated through the ZooKeeper of zookeeper.sh (started here if it is not running).
#
#   clickhouse-cluster.sh start             start every node (in parallel), wait until all answer
#   clickhouse-cluster.sh stop              stop every node
#   clickhouse-cluster.sh status            exit 0 when every node runs
#   clickhouse-cluster.sh env               the nodes' addresses and the cluster's name
#   clickhouse-cluster.sh nodes             the node names, in the cluster's order
#   clickhouse-cluster.sh pid NODE          a node's PID (a failover test kills it by this PID)
#   clickhouse-cluster.sh start-node NODE   (re)start one node, with the ports it had
#   clickhouse-cluster.sh stop-node NODE    stop one node
#
# Nodes are s1r1, s1r2 (shard 1) and s2r1, s2r2 (shard 2); the cluster is named
# CLICKHOUSE_CLUSTER (rocewatch_cluster) in every node's remote_servers, with the {shard} and
# {replica} macros and internal_replication (a Distributed table writes one replica per shard and
# replication copies it). Ports are picked free on the first start and kept in each node's
# node.env under ROCEWATCH_SERVICES_DIR/clickhouse-cluster/, so a restarted node comes back on them.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
source "$HERE/proc.sh"
source "$HERE/cluster.sh"

RUN=${ROCEWATCH_SERVICES_DIR:-$REPO/var/services}/clickhouse-cluster
CLUSTER=${CLICKHOUSE_CLUSTER:-rocewatch_cluster}
NODES=(s1r1 s1r2 s2r1 s2r2)
NODE_SCRIPT=$HERE/clickhouse.sh
NODE_PIDFILE=clickhouse.pid

shard_of() { local n=$1; echo "${n:1:1}"; }

# allocate every node's ports once, then write each node's cluster config (config.d/cluster.xml)
prepare() {
  mkdir -p "$RUN"
  if [[ ! -s $RUN/ports ]]; then free_ports $((3 * ${#NODES[@]})) >"$RUN/ports"; fi
  local ports i=0 n zk
  mapfile -t ports <"$RUN/ports"
  "$HERE/zookeeper.sh" start >/dev/null
  zk=$("$HERE/zookeeper.sh" env)
  zk=${zk#*=}
  for n in "${NODES[@]}"; do
    mkdir -p "$RUN/$n/config.d"
    cat >"$(node_env "$n")" <<ENV
CLICKHOUSE_NAME=clickhouse-cluster/$n
CLICKHOUSE_TCP_PORT=${ports[$i]}
CLICKHOUSE_HTTP_PORT=${ports[$((i + 1))]}
CLICKHOUSE_INTERSERVER_PORT=${ports[$((i + 2))]}
ENV
    i=$((i + 3))
  done
  local shards="" s r
  for s in 1 2; do
    shards+="      <shard>
        <internal_replication>true</internal_replication>
"
    for r in 1 2; do
      shards+="        <replica><host>127.0.0.1</host><port>$(tcp_port "s${s}r${r}")</port></replica>
"
    done
    shards+="      </shard>
"
  done
  for n in "${NODES[@]}"; do
    # the servers run ON CLUSTER DDL under their default profile, not the asking session's
    # settings: 18.16 needs LowCardinality allowed there
    mkdir -p "$RUN/$n/users.d"
    cat >"$RUN/$n/users.d/cluster.xml" <<'CONF'
<?xml version="1.0"?>
<yandex>
  <profiles><default><allow_experimental_low_cardinality_type>1</allow_experimental_low_cardinality_type></default></profiles>
</yandex>
CONF
    cat >"$RUN/$n/config.d/cluster.xml" <<CONF
<?xml version="1.0"?>
<!-- written by clickhouse-cluster.sh: node $n of $CLUSTER -->
<yandex>
  <zookeeper>
    <node><host>${zk%:*}</host><port>${zk##*:}</port></node>
    <session_timeout_ms>10000</session_timeout_ms>
    <operation_timeout_ms>5000</operation_timeout_ms>
  </zookeeper>
  <distributed_ddl><path>/clickhouse/task_queue/ddl</path></distributed_ddl>
  <macros>
    <shard>0$(shard_of "$n")</shard>
    <replica>$n</replica>
  </macros>
  <remote_servers>
    <$CLUSTER>
$shards    </$CLUSTER>
  </remote_servers>
</yandex>
CONF
  done
}

tcp_port() { node_var "$1" CLICKHOUSE_TCP_PORT; }

env_lines() {
  local n addresses=()
  for n in "${NODES[@]}"; do addresses+=("127.0.0.1:$(tcp_port "$n")"); done
  echo "ROCEWATCH_TEST_CLICKHOUSE_CLUSTER=$(IFS=,; echo "${addresses[*]}")"
  echo "ROCEWATCH_TEST_CLICKHOUSE_CLUSTER_NAME=$CLUSTER"
}

cluster_main "$@"
