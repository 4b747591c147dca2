#!/usr/bin/env bash
# Stops the broker that infra/kafka/start.sh started on KAFKA_PORT and deletes its temporary data
# (unless KAFKA_DATA_DIR was given, which is kept).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
port="${KAFKA_PORT:-19092}"
run_dir="$here/.run/$port"
pid_file="$run_dir/kafka.pid"
[ -f "$pid_file" ] || exit 0
pid="$(cat "$pid_file")"
if kill -0 "$pid" 2>/dev/null; then
  kill -TERM "$pid"
  for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
fi
data_dir="$(cat "$run_dir/data_dir" 2>/dev/null || true)"
if [ -z "${KAFKA_DATA_DIR:-}" ] && [ -n "$data_dir" ]; then
  case "$data_dir" in "${TMPDIR:-/tmp}"/fin-kafka-*) rm -rf "$data_dir" "$data_dir.secure" ;; esac
fi
rm -rf "$run_dir"
printf '[kafka] stopped (port %s)\n' "$port" >&2
