#!/usr/bin/env bash
# Starts a standalone ZooKeeper for the tests, in a temporary directory on a
# free loopback port, and prints its connection string (127.0.0.1:PORT) on
# stdout once it answers. Installs Debian's `zookeeper` package if absent.
#   scripts/zookeeper.sh start   -> prints host:port, writes the pid to $dir/pid
#   scripts/zookeeper.sh stop DIR
set -euo pipefail

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

case "${1:-start}" in
stop)
  dir=$2
  if [ -f "$dir/pid" ]; then kill "$(cat "$dir/pid")" 2>/dev/null || true; fi
  rm -rf "$dir"
  exit 0
  ;;
start) ;;
*) echo "usage: $0 start | stop DIR" >&2; exit 2 ;;
esac

if [ ! -f /usr/share/java/zookeeper.jar ]; then
  echo "installing ZooKeeper (Debian package zookeeper)" >&2
  as_root apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq zookeeper >&2
fi
command -v java >/dev/null || { echo "error: java not found (the zookeeper package should bring it)" >&2; exit 1; }

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
dir=$(mktemp -d -t crawlkeeper-zk-XXXXXX)
mkdir -p "$dir/data"
cat > "$dir/zoo.cfg" <<CFG
tickTime=500
minSessionTimeout=1000
maxSessionTimeout=60000
dataDir=$dir/data
clientPort=$port
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,mntr
CFG
cat > "$dir/log4j.properties" <<'LOG'
log4j.rootLogger=WARN, FILE
log4j.appender.FILE=org.apache.log4j.FileAppender
log4j.appender.FILE.File=${zk.log}
log4j.appender.FILE.layout=org.apache.log4j.PatternLayout
log4j.appender.FILE.layout.ConversionPattern=%d %p %c: %m%n
LOG
classpath="$dir:/usr/share/java/zookeeper.jar:$(ls /usr/share/java/*.jar | tr '\n' ':')"
nohup java -Dzk.log="$dir/zookeeper.log" -Dlog4j.configuration="file:$dir/log4j.properties" \
  -cp "$classpath" org.apache.zookeeper.server.ZooKeeperServerMain "$dir/zoo.cfg" \
  >"$dir/stdout.log" 2>&1 &
echo $! > "$dir/pid"
for _ in $(seq 1 120); do
  if [ "$(printf ruok | timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port; cat >&3; cat <&3" 2>/dev/null)" = imok ]; then
    echo "127.0.0.1:$port $dir"
    exit 0
  fi
  sleep 0.25
done
echo "error: ZooKeeper did not answer on 127.0.0.1:$port; see $dir/stdout.log" >&2
tail -20 "$dir/stdout.log" >&2 || true
exit 1
