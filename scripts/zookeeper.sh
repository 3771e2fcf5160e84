#!/usr/bin/env bash
# Starts a standalone ZooKeeper for the tests, in a temporary directory on a
# free loopback port, and prints its connection string and directory
# ("127.0.0.1:PORT DIR") on stdout once it answers. Installs Debian's
# `zookeeper` package if absent.
#   scripts/zookeeper.sh start        -> a new server; prints "host:port DIR"
#   scripts/zookeeper.sh halt DIR     -> stops the server, keeps its data and port
#   scripts/zookeeper.sh restart DIR  -> starts a halted server again (same port, same data)
#   scripts/zookeeper.sh stop DIR     -> stops the server and deletes DIR
set -euo pipefail

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

halt() {
  local dir=$1 pid
  [ -f "$dir/pid" ] || return 0
  pid=$(cat "$dir/pid")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$dir/pid"
}

launch() {
  local dir=$1 port classpath
  port=$(sed -n 's/^clientPort=//p' "$dir/zoo.cfg")
  classpath="$dir:/usr/share/java/zookeeper.jar:$(ls /usr/share/java/*.jar | tr '\n' ':')"
  nohup java -Xmx256m -Dzk.log="$dir/zookeeper.log" -Dlog4j.configuration="file:$dir/log4j.properties" \
    -cp "$classpath" org.apache.zookeeper.server.ZooKeeperServerMain "$dir/zoo.cfg" \
    >"$dir/stdout.log" 2>&1 &
  echo $! > "$dir/pid"
  for _ in $(seq 1 240); do
    if [ "$(printf ruok | timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port; cat >&3; cat <&3" 2>/dev/null)" = imok ]; then
      echo "127.0.0.1:$port $dir"
      return 0
    fi
    sleep 0.25
  done
  echo "error: ZooKeeper did not answer on 127.0.0.1:$port; see $dir/stdout.log" >&2
  tail -20 "$dir/stdout.log" >&2 || true
  return 1
}

case "${1:-start}" in
stop) halt "$2"; rm -rf "$2"; exit 0 ;;
halt) halt "$2"; exit 0 ;;
restart) halt "$2"; launch "$2"; exit ;;
start) ;;
*) echo "usage: $0 start | halt DIR | restart DIR | stop DIR" >&2; exit 2 ;;
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
4lw.commands.whitelist=ruok,srvr,mntr,cons
CFG
cat > "$dir/log4j.properties" <<'LOG'
log4j.rootLogger=WARN, FILE
log4j.appender.FILE=org.apache.log4j.FileAppender
log4j.appender.FILE.File=${zk.log}
log4j.appender.FILE.layout=org.apache.log4j.PatternLayout
log4j.appender.FILE.layout.ConversionPattern=%d %p %c: %m%n
LOG
launch "$dir"
