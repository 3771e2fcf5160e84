#!/usr/bin/env bash
# Makes sure a PostgreSQL server answers on 127.0.0.1:5432 with trust auth
# for user postgres and a database `test` (what the store tests use).
# Installs Debian's package and starts the cluster if needed. Idempotent.
set -euo pipefail

PGHOST=127.0.0.1
PGPORT=5432
answers() { pg_isready -q -h "$PGHOST" -p "$PGPORT" 2>/dev/null; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if ! command -v pg_ctlcluster >/dev/null 2>&1; then
  echo "installing PostgreSQL (Debian package postgresql)"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq postgresql >/dev/null
fi

if ! answers; then
  version=$(ls /etc/postgresql | sort -n | tail -1)
  echo "starting PostgreSQL $version"
  as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  for _ in $(seq 1 60); do answers && break; sleep 0.5; done
  answers || { echo "error: PostgreSQL does not answer on $PGHOST:$PGPORT" >&2; exit 1; }
fi

psql_su() { as_root su postgres -c "psql -qAtX -c \"$1\"" 2>/dev/null; }
if ! psql -qAtX -h "$PGHOST" -U postgres -d postgres -c 'select 1' >/dev/null 2>&1; then
  # A fresh install asks for passwords on TCP: trust loopback, as the tests expect.
  version=$(ls /etc/postgresql | sort -n | tail -1)
  hba=/etc/postgresql/$version/main/pg_hba.conf
  echo "allowing trust auth on loopback in $hba"
  as_root sed -i '1i host all all 127.0.0.1/32 trust' "$hba"
  psql_su 'select pg_reload_conf()' >/dev/null
  sleep 1
fi
if ! psql -qAtX -h "$PGHOST" -U postgres -d postgres -c "select 1 from pg_database where datname = 'test'" | grep -q 1; then
  psql -qAtX -h "$PGHOST" -U postgres -d postgres -c 'create database test'
fi
echo "PostgreSQL ready on $PGHOST:$PGPORT"
