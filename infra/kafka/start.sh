#!/usr/bin/env bash
# Starts a single-node Apache Kafka broker in KRaft mode from Maven Central jars (see pom.xml).
#
#   infra/kafka/start.sh            # background; returns once the broker accepts clients
#   infra/kafka/start.sh --foreground
#
# Environment (all optional):
#   KAFKA_PORT             client listener port          (default 19092)
#   KAFKA_CONTROLLER_PORT  KRaft controller port          (default 19093)
#   KAFKA_DATA_DIR         log and metadata directory     (default: a fresh temporary folder)
#   KAFKA_HEAP_OPTS        JVM heap                       (default -Xms256m -Xmx512m)
#   KAFKA_SECURE=1         also an SSL listener (mutual TLS) and a SASL_SSL listener (PLAIN, SCRAM-SHA-256/512)
#                          with fresh keys, certificates and users (secure.sh); the client's files are written to
#                          infra/kafka/.run/$KAFKA_PORT/client/ (ca.pem, client-cert.pem, client-key.pem, client.json)
#   KAFKA_SSL_PORT         SSL listener port              (default KAFKA_PORT + 2)
#   KAFKA_SASL_PORT        SASL_SSL listener port         (default KAFKA_PORT + 3)
#
# A broker already running on KAFKA_PORT (started by this script) is reused, so a second call is a no-op.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
port="${KAFKA_PORT:-19092}"
controller_port="${KAFKA_CONTROLLER_PORT:-19093}"
run_dir="$here/.run/$port"
pid_file="$run_dir/kafka.pid"
secure="${KAFKA_SECURE:-0}"
ssl_port="${KAFKA_SSL_PORT:-$((port + 2))}"
sasl_port="${KAFKA_SASL_PORT:-$((port + 3))}"
foreground=false
[ "${1:-}" = "--foreground" ] && foreground=true

log() { printf '[kafka] %s\n' "$*" >&2; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

if [ -f "$pid_file" ] && kill -0 "$(cat "$pid_file")" 2>/dev/null && port_open "$port"; then
  log "already running on 127.0.0.1:$port (pid $(cat "$pid_file"))"
  exit 0
fi
if port_open "$port"; then
  log "port $port is taken by another process; set KAFKA_PORT to a free port" && exit 1
fi
if [ "$secure" = 1 ]; then
  for taken in "$ssl_port" "$sasl_port"; do
    port_open "$taken" && { log "port $taken is taken by another process; set KAFKA_SSL_PORT / KAFKA_SASL_PORT"; exit 1; }
  done
  command -v keytool >/dev/null || { log "keytool not found: the JDK's keytool makes the broker's certificates"; exit 1; }
fi

command -v java >/dev/null || { log "java not found: a JDK 17+ is needed to run the broker"; exit 1; }

# Fetch the jars once; later runs find them in .lib and skip Maven.
stamp="$here/.lib/.complete-$(sha1sum "$here/pom.xml" | cut -c1-12)"
if [ ! -f "$stamp" ]; then
  command -v mvn >/dev/null || { log "mvn not found: Maven is needed once to fetch the Kafka jars"; exit 1; }
  log "fetching Kafka jars from Maven Central"
  rm -rf "$here/.lib"
  mvn -q -B -f "$here/pom.xml" dependency:copy-dependencies >&2
  touch "$stamp"
fi

data_dir="${KAFKA_DATA_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/fin-kafka-$port.XXXXXX")}"
mkdir -p "$run_dir" "$data_dir"
config="$run_dir/server.properties"
# The PLAINTEXT listener also carries the broker's own (inter-broker) traffic; the secure ones are for clients.
listeners="PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$controller_port"
advertised="PLAINTEXT://127.0.0.1:$port"
protocols="PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
if [ "$secure" = 1 ]; then
  listeners="$listeners,SSL://127.0.0.1:$ssl_port,SASL_SSL://127.0.0.1:$sasl_port"
  advertised="$advertised,SSL://127.0.0.1:$ssl_port,SASL_SSL://127.0.0.1:$sasl_port"
  protocols="$protocols,SSL:SSL,SASL_SSL:SASL_SSL"
fi
cat > "$config" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$controller_port
listeners=$listeners
advertised.listeners=$advertised
controller.listener.names=CONTROLLER
listener.security.protocol.map=$protocols
inter.broker.listener.name=PLAINTEXT
log.dirs=$data_dir
num.partitions=3
auto.create.topics.enable=false
offsets.topic.replication.factor=1
offsets.topic.num.partitions=10
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
group.min.session.timeout.ms=1000
log.retention.hours=24
PROPS
cat > "$run_dir/log4j2.yaml" <<YAML
Configuration:
  Appenders:
    File:
      name: file
      fileName: "$run_dir/server.log"
      PatternLayout:
        pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Root:
      level: WARN
      AppenderRef:
        ref: file
    Logger:
      - name: kafka.server.KafkaRaftServer
        level: INFO
YAML
scram_users=()
if [ "$secure" = 1 ]; then
  # shellcheck source=secure.sh
  . "$here/secure.sh"
  if [ -f "$data_dir/meta.properties" ] && [ ! -f "$data_dir.secure/secrets.env" ]; then
    log "KAFKA_SECURE=1 needs a fresh KAFKA_DATA_DIR: SCRAM users are created when it is formatted"; exit 1
  fi
  # Beside the data (not in it: every folder of log.dirs must be a partition's), kept and removed with it.
  secure_material "$data_dir.secure" "$run_dir/client"
  secure_properties "$config" "$data_dir.secure/tls" "$run_dir/client"
fi

classpath="$here/.lib/*"
jvm=(${KAFKA_HEAP_OPTS:--Xms256m -Xmx512m} -XX:+UseG1GC -Djava.awt.headless=true
     "-Dlog4j2.configurationFile=$run_dir/log4j2.yaml")

if [ ! -f "$data_dir/meta.properties" ]; then
  # SCRAM credentials go into the metadata log as it is formatted (kafka-storage format --add-scram).
  scram_args=()
  for user in "${scram_users[@]}"; do scram_args+=(--add-scram "$user"); done
  cluster_id="$(java -cp "$classpath" "${jvm[@]}" kafka.tools.StorageTool random-uuid)"
  java -cp "$classpath" "${jvm[@]}" kafka.tools.StorageTool format \
    -t "$cluster_id" -c "$config" --standalone "${scram_args[@]}" >/dev/null
fi

if $foreground; then
  log "starting on 127.0.0.1:$port (data in $data_dir), Ctrl-C stops it"
  exec java -cp "$classpath" "${jvm[@]}" kafka.Kafka "$config"
fi

: > "$run_dir/server.log"
nohup java -cp "$classpath" "${jvm[@]}" kafka.Kafka "$config" > "$run_dir/stdout.log" 2>&1 &
echo $! > "$pid_file"
echo "$data_dir" > "$run_dir/data_dir"

for _ in $(seq 1 120); do
  if grep -q "started" "$run_dir/server.log" 2>/dev/null && port_open "$port" &&
    { [ "$secure" != 1 ] || { port_open "$ssl_port" && port_open "$sasl_port"; }; }; then
    log "ready on 127.0.0.1:$port (pid $(cat "$pid_file"), data in $data_dir)"
    [ "$secure" = 1 ] && log "SSL on 127.0.0.1:$ssl_port, SASL_SSL on 127.0.0.1:$sasl_port, client files in $run_dir/client"
    exit 0
  fi
  if ! kill -0 "$(cat "$pid_file")" 2>/dev/null; then
    log "broker exited during start-up:"; tail -n 40 "$run_dir/server.log" "$run_dir/stdout.log" >&2; exit 1
  fi
  sleep 0.5
done
log "broker did not become ready within 60 s"; tail -n 40 "$run_dir/server.log" >&2; exit 1
