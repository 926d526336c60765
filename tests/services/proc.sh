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
  local deadline=$((SECONDS + 30))
  while kill -0 "$pid" 2>/dev/null; do
    if ((SECONDS >= deadline)); then
      echo "$name (pid $pid) ignored SIGTERM for 30 s: killing it" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
    sleep 0.1
  done
  rm -f "$pidfile"
  echo "$name stopped (pid $pid)"
}

# free_port: a TCP port nobody listens on right now (the kernel picks it).
free_port() {
  "${PYTHON:-python3}" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
