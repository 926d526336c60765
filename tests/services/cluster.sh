# What clickhouse-cluster.sh and kafka-cluster.sh share (sourced, not run): a cluster is NODES
# (names), each one process of a single-node script (NODE_SCRIPT, whose PID file in the node's
# run directory is NODE_PIDFILE) run with the environment recorded in RUN/<node>/node.env.
#
# The sourcing script sets NODES, RUN, NODE_SCRIPT, NODE_PIDFILE, and defines `prepare` (record
# every node's node.env and configs) and `env_lines`; then `cluster_main "$@"` answers
#   start | stop | status | env | nodes | pid NODE | start-node NODE | stop-node NODE
# Nodes start together (a quorum needs its members) and stop together (the last member of a
# quorum, left alone, waits for the others).

node_env() { echo "$RUN/$1/node.env"; }

# node VERB NAME: the single-node script's VERB for one node, with its recorded environment
node() { with_env "$(node_env "$2")" "$NODE_SCRIPT" "$1"; }

# node_var NAME VAR: a variable of a node's recorded environment
node_var() { (source "$(node_env "$1")" && echo "${!2}"); }

start_node() { node start "$1"; }

stop_node() { [[ ! -s $(node_env "$1") ]] || node stop "$1"; }

check_node() {
  local n
  for n in "${NODES[@]}"; do [[ $n == "$1" ]] && return 0; done
  echo "$(basename "$0"): unknown node $1 (${NODES[*]})" >&2
  exit 2
}

cluster_start() {
  prepare
  if ! in_parallel start_node "${NODES[@]}"; then
    echo "$(basename "$0"): a node did not start" >&2
    cluster_stop >/dev/null || true
    exit 1
  fi
}

cluster_stop() { in_parallel stop_node "${NODES[@]}"; }

cluster_main() {
  local n rc=0
  case ${1:-} in
    start) cluster_start ;;
    stop) cluster_stop ;;
    status)
      for n in "${NODES[@]}"; do node status "$n" || rc=3; done
      return $rc
      ;;
    env) env_lines ;;
    nodes) printf '%s\n' "${NODES[@]}" ;;
    pid)
      check_node "${2:?node}"
      cat "$RUN/$2/$NODE_PIDFILE"
      ;;
    start-node) check_node "${2:?node}"; start_node "$2" ;;
    stop-node) check_node "${2:?node}"; stop_node "$2" ;;
    *)
      echo "usage: $0 start|stop|status|env|nodes|pid NODE|start-node NODE|stop-node NODE" >&2
      return 2
      ;;
  esac
}
