#!/usr/bin/env bash
# The whole check, as CI runs it: lint (zero warnings), type-check, build, then every test suite against
# real Postgres (TEST_DATABASE_URL, default the local server), a real Kafka broker (started here from
# infra/kafka unless KAFKA_BROKERS points at one) and a real headless Chromium (installed when missing). Extra arguments go to Jest, e.g. `npm test -- packages/events`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
step() { printf "\n== %s (at %d s)\n" "$*" "$SECONDS"; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
ours() { [ -f "infra/kafka/.run/$1/kafka.pid" ] && kill -0 "$(cat "infra/kafka/.run/$1/kafka.pid")" 2>/dev/null; }

# The brokers start in the background from here, beside lint and build: the Kafka broker the tests use (started from
# infra/kafka unless KAFKA_BROKERS points at one; on a fresh clone its first start fetches the jars), then the
# secure one (an SSL listener and a SASL_SSL one, start.sh with KAFKA_SECURE=1) on KAFKA_SECURE_PORT..+3. Each
# start is mostly a JVM's, most of a minute for the secure one, which the tests would otherwise wait for. A run
# stops the brokers it started.
started_kafka=false
if [ -z "${KAFKA_BROKERS:-}" ]; then
  port="${KAFKA_PORT:-19092}"
  # A port held by something else (another checkout's broker, say) moves us to the next pair of ports.
  for _ in 1 2 3 4 5; do
    if ours "$port" || { ! port_open "$port" && ! port_open "$((port + 1))"; }; then break; fi
    port=$((port + 100))
  done
  export KAFKA_PORT="$port" KAFKA_CONTROLLER_PORT="$((port + 1))"
  ours "$KAFKA_PORT" || started_kafka=true
  export KAFKA_BROKERS="127.0.0.1:$KAFKA_PORT"
fi
secure_port="${KAFKA_SECURE_PORT:-19492}"
for _ in 1 2 3 4 5; do
  if ours "$secure_port" || ! { port_open "$secure_port" || port_open "$((secure_port + 1))" || port_open "$((secure_port + 2))" || port_open "$((secure_port + 3))"; }; then break; fi
  secure_port=$((secure_port + 100))
done
export KAFKA_SECURE_PORT="$secure_port"
secure_was_running=false
if ours "$KAFKA_SECURE_PORT"; then secure_was_running=true; fi
start_brokers() {
  if $started_kafka; then bash infra/kafka/start.sh || exit 1; fi
  # Under the lock that secureTestKafka (@fin/testing) takes: a test that needs the secure broker before this start
  # is done waits for it and reuses the broker; if this start fails, that test tries again and reports why.
  mkdir -p infra/kafka/.run
  KAFKA_SECURE=1 KAFKA_PORT="$KAFKA_SECURE_PORT" KAFKA_CONTROLLER_PORT="$((KAFKA_SECURE_PORT + 1))" \
    KAFKA_SSL_PORT="$((KAFKA_SECURE_PORT + 2))" KAFKA_SASL_PORT="$((KAFKA_SECURE_PORT + 3))" \
    flock -o "infra/kafka/.run/secure-$KAFKA_SECURE_PORT.lock" bash infra/kafka/start.sh || exit 2
}
brokers_log="$(mktemp)"
(start_brokers) >"$brokers_log" 2>&1 &
brokers_pid=$!
stop_brokers() {
  wait "$brokers_pid" 2>/dev/null || true
  $secure_was_running || KAFKA_PORT="$KAFKA_SECURE_PORT" bash infra/kafka/stop.sh
  if $started_kafka; then bash infra/kafka/stop.sh; fi
}
trap stop_brokers EXIT

# The checks run in two lanes, each one single-threaded process at a time: on two cores they run side by side, each
# lane's output printed when it ends (in full, with its steps' times), and the run stops after both if either
# failed. The lanes hold about equal work: Prettier and ESLint in one; the type-check, the build, knip and the
# OpenAPI lint in the other. Neither reads the other's output: ESLint, Prettier and knip skip dist/ (knip maps a
# built import back to its source through each package's outDir), and the type-check resolves the workspace
# packages to their sources.
lane_logs="$(mktemp -d)"
lint_lane() {
  step "lint"
  # Formatting (Prettier), then typescript-eslint's strict type-checked rules with zero warnings. `npm run format`
  # rewrites what the first check refuses.
  prettier --check . --log-level warn
  # Type-checked rules over the whole workspace hold every program in memory: more than Node's default heap.
  NODE_OPTIONS="${NODE_OPTIONS:-} --max-old-space-size=8192" eslint . --max-warnings 0
  step "lint done"
}
build_lane() {
  step "type-check"
  node scripts/sync-build-references.mjs --check
  tsc -p tsconfig.json
  step "build"
  # Every package and service to dist/ in one tsc -b (scripts/build.mjs): the standalone tests start `npm start`,
  # which runs the compiled system.
  node scripts/build.mjs
  step "unused files, exports and dependencies (knip)"
  knip --no-progress
  step "OpenAPI lint"
  # The OpenAPI document the gateway serves, linted by Redocly CLI with the configuration consumers are given
  # (redocly.yaml): errors and warnings both fail.
  node --conditions=development --import tsx scripts/lint-openapi.mjs
  step "build done"
}
step "lint | type-check, build (side by side)"
(lint_lane) >"$lane_logs/lint" 2>&1 &
lint_pid=$!
(build_lane) >"$lane_logs/build" 2>&1 &
build_pid=$!
lint_status=0
build_status=0
wait "$lint_pid" || lint_status=$?
cat "$lane_logs/lint"
wait "$build_pid" || build_status=$?
cat "$lane_logs/build"
rm -rf "$lane_logs"
if [ "$lint_status" -ne 0 ] || [ "$build_status" -ne 0 ]; then
  echo "lint exited $lint_status, type-check and build $build_status" >&2
  exit 1
fi

step "postgres"
admin_url="${TEST_DATABASE_URL:-postgresql://postgres@127.0.0.1:5432/postgres}"
probe="const pg=require(require.resolve('pg',{paths:['packages/db']}));const c=new pg.Client(process.argv[1]);c.connect().then(()=>c.end(),e=>{console.error(e.message);process.exit(1)})"
if ! node -e "$probe" "$admin_url"; then
  echo "PostgreSQL is not reachable at ${admin_url%%@*}@…; start it or set TEST_DATABASE_URL." >&2
  exit 1
fi
echo "reachable"

step "kafka"
brokers_status=0
wait "$brokers_pid" || brokers_status=$?
cat "$brokers_log"
rm -f "$brokers_log"
if [ "$brokers_status" -eq 1 ]; then
  echo "The Kafka broker did not start (its output above)." >&2
  exit 1
fi
[ "$brokers_status" -eq 0 ] || echo "The secure Kafka broker did not start (its output above); the tests that need it try again."
$started_kafka || echo "using the broker already running at $KAFKA_BROKERS"

step "chromium"
# The portal's browser tests drive a real headless Chromium (Debian's package), installed here when missing.
bash scripts/ensure-chromium.sh

step "tests"
results="$(mktemp)"
status=0
if [ "$#" -gt 0 ]; then
  jest --ci --forceExit --maxWorkers=2 --json --outputFile="$results" "$@" || status=$?
else
  # The system tests start every service as a process (and one its own Kafka broker): they run after the other
  # suites, one file at a time, so they do not compete with them for this machine's two cores.
  jest --ci --forceExit --maxWorkers=2 --json --outputFile="$results" --selectProjects $(ls -d packages/*/ services/*/ infra/ | xargs -n1 basename) || status=$?
  e2e_results="$(mktemp)"
  jest --ci --forceExit --runInBand --json --outputFile="$e2e_results" --selectProjects e2e || status=$?
  node -e '
    const fs = require("fs");
    const [a, b] = process.argv.slice(1).map((file) => JSON.parse(fs.readFileSync(file, "utf8")));
    for (const key of ["numPassedTests", "numFailedTests", "numPendingTests", "numTodoTests", "numRuntimeErrorTestSuites"]) a[key] += b[key];
    a.testResults.push(...b.testResults);
    fs.writeFileSync(process.argv[1], JSON.stringify(a));
  ' "$results" "$e2e_results"
  rm -f "$e2e_results"
fi
stop_brokers
trap - EXIT
# The slowest suites (where the run's time goes), then the closing line, in the plain "N passed, N failed" form
# that CI reads.
node -e '
  const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const slowest = r.testResults
    .map((suite) => ({ seconds: (suite.endTime - suite.startTime) / 1000, file: require("path").relative(process.cwd(), suite.name) }))
    .sort((a, b) => b.seconds - a.seconds)
    .slice(0, 15);
  console.log("\nSlowest suites:");
  for (const { seconds, file } of slowest) console.log(`${seconds.toFixed(1).padStart(8)} s  ${file}`);
  const failed = r.numFailedTests + r.numRuntimeErrorTestSuites;
  console.log(`\nTests: ${r.numPassedTests} passed, ${failed} failed, ${r.numPendingTests + r.numTodoTests} skipped`);
' "$results" || true
rm -f "$results"
exit "$status"
