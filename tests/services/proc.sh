# Process bookkeeping shared by kafka.sh and clickhouse.sh (sourced, not run):
# start a daemon detached and remember its PID, wait for a TCP port, stop exactly that PID.

# pid_alive PIDFILE MARK: true when the PID in PIDFILE runs and its command line contains MARK
# (the run directory), so a reused PID is never mistaken for ours.
pid_alive() {
  local pidfile=$1 mark=$2 pid
  [[ -s $pidfile ]] || return 1
  pid=$(<"$pidfile")
  [[ -r /proc/$pid/cmdline ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$mark"
}

# port_open PORT: true when something accepts TCP connections on 127.0.0.1:PORT.
port_open() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# wait_for SECONDS DESCRIPTION COMMAND...: poll COMMAND every 0.1 s until it succeeds.
wait_for() {
  local seconds=$1 what=$2
  shift 2
  local deadline=$((SECONDS + seconds))
  until "$@"; do
    if ((SECONDS >= deadline)); then
      echo "timed out after ${seconds}s waiting for $what" >&2
      return 1
    fi
    sleep 0.1
  done
}

# stop_pid PIDFILE MARK NAME: SIGTERM the process we started, SIGKILL it after 30 s.
stop_pid() {
  local pidfile=$1 mark=$2 name=$3 pid
  if ! pid_alive "$pidfile" "$mark"; then
    rm -f "$pidfile"
    return 0
  fi
  pid=$(<"$pidfile")
  kill -TERM "$pid" 2>/dev/null || true
  local deadline=$((SECONDS + 30)) killed=""
  while kill -0 "$pid" 2>/dev/null; do
    if [[ -z $killed ]] && ((SECONDS >= deadline)); then
      echo "$name (pid $pid) ignored SIGTERM for 30 s: killing it" >&2
      kill -KILL "$pid" 2>/dev/null || true
      killed=yes
    fi
    sleep 0.1
  done
  rm -f "$pidfile"
  echo "$name stopped (pid $pid)"
}

# free_port: a TCP port nobody listens on right now (the kernel picks it).
free_port() {
  free_ports 1
}

# free_ports N: N distinct TCP ports nobody listens on right now, one per line (all are held
# open until every one is picked, so the kernel cannot hand out one twice).
free_ports() {
  "${PYTHON:-python3}" -c '
import socket, sys
held = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    held.append(s)
print("\n".join(str(s.getsockname()[1]) for s in held))' "$1"
}

# kill_pid PIDFILE MARK NAME: SIGKILL the process we started (a crash, for failover tests) and
# wait until it is gone; the PID file stays, so a later start knows the directory.
kill_pid() {
  local pidfile=$1 mark=$2 name=$3 pid
  pid_alive "$pidfile" "$mark" || { echo "$name is not running" >&2; return 1; }
  pid=$(<"$pidfile")
  kill -KILL "$pid"
  while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
  echo "$name killed (pid $pid, SIGKILL)"
}

# with_env ENVFILE COMMAND...: run COMMAND with the assignments of ENVFILE exported (a cluster
# node's recorded name and ports), in a subshell.
with_env() {
  local envfile=$1
  shift
  [[ -s $envfile ]] || { echo "no $envfile (start the cluster first)" >&2; return 1; }
  (set -a && source "$envfile" && set +a && "$@")
}

# in_parallel COMMAND ARG...: run `COMMAND ARG` for every ARG at once; fails when any failed.
in_parallel() {
  local cmd=$1 arg pid rc=0 pids=()
  shift
  for arg in "$@"; do
    "$cmd" "$arg" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
  return $rc
}
