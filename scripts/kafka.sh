#!/usr/bin/env bash
# A single-node Apache Kafka broker (KRaft: broker and controller in one JVM)
# on loopback, for sluice's Kafka source and sink, their tests and
# experiments/connectors.py. The jars come from Maven Central
# (scripts/kafka-pom.xml: org.apache.kafka:kafka_2.13 and kafka-tools) and run
# on Debian's OpenJDK 17; there is no Kafka package in Debian 12.
#
#   scripts/kafka.sh fetch                    fetch the jars into the cache (setup.sh runs it)
#   scripts/kafka.sh up                       start the broker (or find it running); the last
#                                             line printed is bootstrap=127.0.0.1:PORT
#   scripts/kafka.sh status                   bootstrap=... and exit 0 while it runs, else exit 3
#   scripts/kafka.sh topic NAME PARTITIONS [KEY=VALUE...]
#                                             create a topic (KEY=VALUE: topic configs)
#   scripts/kafka.sh down                     stop it and delete its data
#
# Environment:
#   SLUICE_KAFKA_DIR    its scratch folder: server.properties, data, log, pid, ports
#                       (default /tmp/sluice-kafka-$UID); one broker per folder
#   SLUICE_KAFKA_PORT   the client port (default: the first free of 19092, 19192, ...);
#                       the controller listens on PORT + 1
#   SLUICE_KAFKA_CACHE  where the jars are kept (default ~/.cache/sluice/kafka-VERSION:
#                       outside the build folder, so a rebuild keeps them)
#   SLUICE_KAFKA_HEAP   the broker's heap (default 512m)
#
# Exit status: 0 ok; 1 failed (the broker's log is named); 2 bad arguments;
# 3 status: not running.
set -euo pipefail

VERSION=4.1.1
HERE=$(cd "$(dirname "$0")" && pwd)
DIR=${SLUICE_KAFKA_DIR:-/tmp/sluice-kafka-$(id -u)}
CACHE=${SLUICE_KAFKA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sluice/kafka-$VERSION}
HEAP=${SLUICE_KAFKA_HEAP:-512m}
START_TIMEOUT_S=90

say() { echo "kafka.sh: $*" >&2; }
die() { say "$*"; exit 1; }

java_cp() { echo "$CACHE/lib/*"; }

fetch() {
  if [[ -f "$CACHE/lib/.complete" ]]; then
    return 0
  fi
  command -v mvn >/dev/null || die "mvn not found: install maven (scripts/setup.sh does)"
  command -v java >/dev/null || die "java not found: install openjdk-17-jdk-headless (scripts/setup.sh does)"
  say "fetching Apache Kafka $VERSION's jars from Maven Central into $CACHE (a minute or two, once)"
  mkdir -p "$CACHE"
  local tmp
  tmp=$(mktemp -d "$CACHE/fetch.XXXXXX")
  cp "$HERE/kafka-pom.xml" "$tmp/pom.xml"
  if ! mvn -q -B -f "$tmp/pom.xml" -Dkafka.version="$VERSION" \
      dependency:copy-dependencies -DoutputDirectory="$tmp/lib" >"$tmp/mvn.log" 2>&1; then
    tail -20 "$tmp/mvn.log" >&2
    die "mvn could not fetch the jars (log: $tmp/mvn.log)"
  fi
  ls "$tmp"/lib/kafka_2.13-"$VERSION".jar >/dev/null 2>&1 || die "no kafka_2.13-$VERSION.jar after mvn (log: $tmp/mvn.log)"
  rm -rf "$CACHE/lib"
  mv "$tmp/lib" "$CACHE/lib"
  touch "$CACHE/lib/.complete"
  rm -rf "$tmp"
  say "$(ls "$CACHE/lib" | wc -l) jars in $CACHE/lib"
}

# Whether something listens on 127.0.0.1:PORT.
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

running_pid() {
  [[ -f "$DIR/pid" ]] || return 1
  local pid
  pid=$(cat "$DIR/pid")
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || return 1
  # The pid is the broker's only if its command line names this folder.
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$DIR/server.properties" || return 1
  echo "$pid"
}

pick_port() {
  if [[ -n "${SLUICE_KAFKA_PORT:-}" ]]; then
    echo "$SLUICE_KAFKA_PORT"
    return
  fi
  local p
  for p in $(seq 19092 100 25092); do
    if ! listening "$p" && ! listening $((p + 1)); then
      echo "$p"
      return
    fi
  done
  die "no free pair of ports between 19092 and 25093"
}

up() {
  fetch
  mkdir -p "$DIR"
  if pid=$(running_pid); then
    local port
    port=$(cat "$DIR/port")
    if listening "$port"; then
      say "running already (pid $pid, data in $DIR/data)"
      echo "bootstrap=127.0.0.1:$port"
      return 0
    fi
  fi
  local port ctl
  port=$(pick_port)
  ctl=$((port + 1))
  listening "$port" && die "port $port is in use (set SLUICE_KAFKA_PORT)"
  listening "$ctl" && die "port $ctl (the controller's) is in use (set SLUICE_KAFKA_PORT)"
  rm -rf "$DIR/data"
  cat >"$DIR/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$ctl
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$ctl
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$DIR/data
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
group.initial.rebalance.delay.ms=0
num.partitions=4
auto.create.topics.enable=false
transaction.abort.timed.out.transaction.cleanup.interval.ms=10000
EOF
  cat >"$DIR/log4j.properties" <<EOF
log4j.rootLogger=WARN, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File=$DIR/server.log
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.server.KafkaServer=INFO
log4j.logger.kafka.server.BrokerServer=INFO
EOF
  local cp uuid
  cp=$(java_cp)
  uuid=$(java -cp "$cp" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -1)
  [[ -n "$uuid" ]] || die "StorageTool random-uuid printed nothing"
  java -cp "$cp" kafka.tools.StorageTool format -t "$uuid" -c "$DIR/server.properties" \
    >"$DIR/format.log" 2>&1 || { cat "$DIR/format.log" >&2; die "formatting $DIR/data failed"; }
  echo "$port" >"$DIR/port"
  : >"$DIR/server.log"
  # setsid: its own session, so the shell or test that started it can end
  # without taking it along; it stops with `down` only. With no descriptor
  # but 0, 1 and 2: one it inherited would stay open as long as it runs (the
  # lock of `flock -x LOCK scripts/kafka.sh up`, held by a broker that runs
  # on, kept every other holder of LOCK waiting).
  (
    for fd in /proc/$BASHPID/fd/*; do
      fd=${fd##*/}
      if ((fd > 2)); then eval "exec $fd>&-" 2>/dev/null || true; fi
    done
    exec setsid java -Xmx"$HEAP" -Xms"$HEAP" -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
      -Dlog4j.configuration="file:$DIR/log4j.properties" \
      -cp "$cp" kafka.Kafka "$DIR/server.properties"
  ) >"$DIR/stdout.log" 2>&1 </dev/null &
  local pid=$!
  echo "$pid" >"$DIR/pid"
  local t0=$SECONDS
  until listening "$port"; do
    kill -0 "$pid" 2>/dev/null || { tail -30 "$DIR/stdout.log" "$DIR/server.log" >&2; die "the broker died while starting (logs: $DIR/stdout.log, $DIR/server.log)"; }
    (( SECONDS - t0 < START_TIMEOUT_S )) || { kill "$pid" 2>/dev/null; die "the broker did not listen on 127.0.0.1:$port within $START_TIMEOUT_S s (log: $DIR/server.log)"; }
    sleep 0.2
  done
  # Listening is not serving yet: ready once it answers a metadata request.
  until kcat -b "127.0.0.1:$port" -L -m 2 >/dev/null 2>&1; do
    (( SECONDS - t0 < START_TIMEOUT_S )) || die "the broker listens but answers no metadata request (log: $DIR/server.log)"
    sleep 0.2
  done
  say "started in $(( SECONDS - t0 )) s (pid $pid, data in $DIR/data, log $DIR/server.log)"
  echo "bootstrap=127.0.0.1:$port"
}

status() {
  local pid port
  if pid=$(running_pid) && port=$(cat "$DIR/port") && listening "$port"; then
    echo "running: pid $pid, data in $DIR/data"
    echo "bootstrap=127.0.0.1:$port"
    return 0
  fi
  echo "not running ($DIR)"
  return 3
}

topic() {
  [[ $# -ge 2 ]] || { say "usage: kafka.sh topic NAME PARTITIONS [KEY=VALUE...]"; exit 2; }
  local name=$1 parts=$2
  shift 2
  [[ "$parts" =~ ^[1-9][0-9]*$ ]] || { say "PARTITIONS must be a positive number, not '$parts'"; exit 2; }
  local port
  port=$(cat "$DIR/port" 2>/dev/null) && running_pid >/dev/null || die "no broker running in $DIR (scripts/kafka.sh up)"
  local configs=()
  for kv in "$@"; do configs+=(--config "$kv"); done
  java -cp "$(java_cp)" -Dlog4j.configuration="file:$DIR/log4j.properties" org.apache.kafka.tools.TopicCommand \
    --bootstrap-server "127.0.0.1:$port" --create --if-not-exists --topic "$name" \
    --partitions "$parts" --replication-factor 1 "${configs[@]}" >&2 ||
    die "could not create topic $name"
  # The topic's leaders may take a moment to be elected: wait until every
  # partition has one, so the first produce does not fail.
  local t0=$SECONDS
  until [[ $(kcat -b "127.0.0.1:$port" -L -t "$name" -m 5 2>/dev/null | grep -c 'leader 1,') -ge "$parts" ]]; do
    (( SECONDS - t0 < 30 )) || die "topic $name has partitions without a leader after 30 s"
    sleep 0.1
  done
  echo "topic=$name partitions=$parts"
}

down() {
  local pid
  if pid=$(running_pid); then
    kill "$pid"
    local t0=$SECONDS
    while kill -0 "$pid" 2>/dev/null; do
      if (( SECONDS - t0 >= 20 )); then
        say "pid $pid did not stop in 20 s: SIGKILL"
        kill -9 "$pid" 2>/dev/null || true
        break
      fi
      sleep 0.1
    done
    say "stopped pid $pid"
  else
    say "no broker running in $DIR"
  fi
  rm -rf "$DIR"
}

cmd=${1:-}
[[ $# -gt 0 ]] && shift
case "$cmd" in
  fetch) fetch ;;
  up) up ;;
  status) status ;;
  topic) topic "$@" ;;
  down) down ;;
  -h|--help|help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) say "usage: kafka.sh fetch|up|status|topic NAME PARTITIONS|down (try --help)"; exit 2 ;;
esac
