#!/usr/bin/env bash
# Start local PostgreSQL and Redis if they are installed but not running, and make sure the
# studio's database exists. Used by `make test` (required) and `make demo` (best effort:
# without them the studio runs in its embedded SQLite mode).
set -u
mode=${1:-required}
pg_host=${PGHOST:-127.0.0.1}
db_name=${PAINTAPP_DB_NAME:-paintapp}

port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

fail() {
  echo "services: $*" >&2
  [ "$mode" = "required" ] && exit 1
  exit 0
}

if ! port_open 127.0.0.1 5432; then
  if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
    echo "services: starting PostgreSQL"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -n1)" main start || true
  fi
  for _ in $(seq 1 30); do port_open 127.0.0.1 5432 && break; sleep 0.5; done
  port_open 127.0.0.1 5432 || fail "PostgreSQL is not reachable on 127.0.0.1:5432 (install postgresql or set DATABASE_URL)"
fi

if ! port_open 127.0.0.1 6379; then
  if command -v redis-server >/dev/null 2>&1; then
    echo "services: starting Redis"
    mkdir -p /var/lib/redis /var/log/redis 2>/dev/null || true
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
      --dir /var/lib/redis --logfile /var/log/redis/paintapp.log || true
  fi
  for _ in $(seq 1 30); do port_open 127.0.0.1 6379 && break; sleep 0.5; done
  port_open 127.0.0.1 6379 || fail "Redis is not reachable on 127.0.0.1:6379 (install redis-server or set CELERY_BROKER_URL)"
fi

if [ -z "${DATABASE_URL:-}" ]; then
  if ! psql -h "$pg_host" -U postgres -lqt 2>/dev/null | cut -d'|' -f1 | grep -qw "$db_name"; then
    createdb -h "$pg_host" -U postgres "$db_name" || fail "could not create database $db_name"
  fi
fi
echo "services: PostgreSQL and Redis are up"
