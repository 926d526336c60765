#!/usr/bin/env bash
# A real Prometheus Alertmanager for the tests, built from its Go module and started on loopback.
#
#   alertmanager.sh fetch     build the binary into .cache/ (once; later runs reuse it)
#   alertmanager.sh start     write the config, start it, wait until /-/ready answers
#   alertmanager.sh stop      stop the Alertmanager this directory's PID file names
#   alertmanager.sh status    exit 0 when it runs
#   alertmanager.sh env       its address, as a shell assignment
#
# The build: `go mod download` of github.com/prometheus/alertmanager@$ALERTMANAGER_VERSION from the
# Go module proxy, a writable copy of the module, then `go build ./cmd/alertmanager`. The module
# zip has no built web UI (ui/app/dist is made by `npm run build`, which is not in the zip), yet
# ui/web.go embeds it (`//go:embed app/dist`): we write a placeholder page into
# ui/app/dist/{elm,mantine}/ before building. The API (/api/v2) is all the tests use.
#
# Environment: ROCEWATCH_SERVICES_DIR (run directory, default var/services), ALERTMANAGER_PORT
# (a free port on the first start, then the one recorded in the run directory),
# ALERTMANAGER_VERSION (0.35.0), ROCEWATCH_CACHE_DIR (.cache). Clustering (gossip) is off.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
source "$HERE/proc.sh"

ALERTMANAGER_VERSION=${ALERTMANAGER_VERSION:-0.35.0}
CACHE=${ROCEWATCH_CACHE_DIR:-$REPO/.cache}
BUILD=$CACHE/alertmanager-$ALERTMANAGER_VERSION
BIN=$BUILD/alertmanager
RUN=${ROCEWATCH_SERVICES_DIR:-$REPO/var/services}/alertmanager
PIDFILE=$RUN/alertmanager.pid
MODULE=github.com/prometheus/alertmanager
if [[ -z ${ALERTMANAGER_PORT:-} && -s $RUN/port ]]; then ALERTMANAGER_PORT=$(<"$RUN/port"); fi

fetch() {
  [[ -x $BIN ]] && return 0
  command -v go >/dev/null || { echo "alertmanager.sh: no Go toolchain (go) to build Alertmanager" >&2; exit 1; }
  echo "building Prometheus Alertmanager $ALERTMANAGER_VERSION from the Go module proxy into $BUILD ..."
  export GOMODCACHE=$CACHE/gomod GOFLAGS="-modcacherw -buildvcs=false"
  local dir src=$BUILD/src
  mkdir -p "$CACHE"  # a fresh clone: the Maven services may not have made it yet (they start alongside)
  dir=$(cd "$CACHE" && go mod download -json "$MODULE@v$ALERTMANAGER_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [[ -d $dir ]] || { echo "alertmanager.sh: go mod download gave no module directory" >&2; exit 1; }
  rm -rf "$src"
  mkdir -p "$BUILD"
  cp -r "$dir" "$src"
  chmod -R u+w "$src"
  # the web UI's build output, absent from the module zip: a placeholder the embed can hold
  for ui in elm mantine; do
    mkdir -p "$src/ui/app/dist/$ui"
    printf '<!doctype html><title>Alertmanager</title><p>Web UI not built (rocewatch tests use the API).</p>\n' \
      >"$src/ui/app/dist/$ui/index.html"
  done
  (cd "$src" && go build -trimpath -o "$BIN.tmp" ./cmd/alertmanager) || { rm -f "$BIN.tmp"; exit 1; }
  mv "$BIN.tmp" "$BIN"
  rm -rf "$src"
  echo "built $BIN"
}

write_config() {
  mkdir -p "$RUN/data" "$RUN/log"
  echo "$ALERTMANAGER_PORT" >"$RUN/port"
  # one receiver with no integration: the tests read what Alertmanager holds over its API v2;
  # the route matches on the labels rocewatch sends (severity, root_cause, entity_kind)
  cat >"$RUN/alertmanager.yml" <<CONF
route:
  receiver: blackhole
  group_by: [alertname, entity]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
  routes:
    - receiver: oncall
      matchers: ['severity="critical"', 'root_cause="true"']
receivers:
  - name: blackhole
  - name: oncall
CONF
}

start() {
  if pid_alive "$PIDFILE" "$RUN/"; then
    echo "alertmanager already running (pid $(<"$PIDFILE")) on 127.0.0.1:$ALERTMANAGER_PORT"
    return 0
  fi
  fetch
  ALERTMANAGER_PORT=${ALERTMANAGER_PORT:-$(free_port)}
  write_config
  if port_open "$ALERTMANAGER_PORT"; then
    echo "alertmanager.sh: 127.0.0.1:$ALERTMANAGER_PORT is taken by another process" >&2
    exit 1
  fi
  # setsid: it outlives this script and is not hit by the terminal's Ctrl-C
  setsid "$BIN" --config.file="$RUN/alertmanager.yml" --storage.path="$RUN/data" \
    --web.listen-address="127.0.0.1:$ALERTMANAGER_PORT" \
    --cluster.listen-address= \
    --log.level=info >"$RUN/log/alertmanager.log" 2>&1 </dev/null &
  echo $! >"$PIDFILE"
  if ! wait_for 60 "alertmanager on 127.0.0.1:$ALERTMANAGER_PORT" ready; then
    tail -20 "$RUN/log/alertmanager.log" >&2 || true
    stop_pid "$PIDFILE" "$RUN/" alertmanager
    exit 1
  fi
  echo "alertmanager $ALERTMANAGER_VERSION running (pid $(<"$PIDFILE")) on 127.0.0.1:$ALERTMANAGER_PORT"
}

ready() {
  kill -0 "$(<"$PIDFILE")" 2>/dev/null || { echo "alertmanager exited during start-up" >&2; exit 1; }
  port_open "$ALERTMANAGER_PORT" &&
    "${PYTHON:-python3}" -c 'import sys, urllib.request as u; u.urlopen(sys.argv[1], timeout=2)' \
      "http://127.0.0.1:$ALERTMANAGER_PORT/-/ready" >/dev/null 2>&1
}

case ${1:-} in
  fetch) fetch ;;
  start) start ;;
  stop) stop_pid "$PIDFILE" "$RUN/" alertmanager ;;
  status)
    if pid_alive "$PIDFILE" "$RUN/"; then
      echo "alertmanager running (pid $(<"$PIDFILE")) on 127.0.0.1:$ALERTMANAGER_PORT"
    else
      echo "alertmanager not running"
      exit 3
    fi
    ;;
  env) echo "ROCEWATCH_TEST_ALERTMANAGER=127.0.0.1:${ALERTMANAGER_PORT:?alertmanager has not been started}" ;;
  *) echo "usage: $0 fetch|start|stop|status|env" >&2; exit 2 ;;
esac
