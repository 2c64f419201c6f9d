#!/usr/bin/env bash
# A team server for testing cli-org the way a team runs it: Debian's PostgreSQL (no
# pgvector), TCP on a free local port, scram passwords, and an administrator that is NOT a
# superuser but has CREATEROLE and CREATEDB (what managed PostgreSQL services hand out).
#
#   scripts/team-server.sh start DIR   # initdb (once) and start; prints the admin URL
#   scripts/team-server.sh stop DIR
#   scripts/team-server.sh url DIR     # the admin URL of a running server
#
# PG_BIN picks the server's binaries (default: Debian's newest under /usr/lib/postgresql).
# As root, the server runs as the unprivileged system user TEAM_SERVER_USER (default
# `postgres`, made by Debian's package), since PostgreSQL refuses to run as root.
set -euo pipefail

cmd=${1:-}
dir=${2:-}
if [[ -z "$cmd" || -z "$dir" ]]; then
  echo "usage: $0 start|stop|url DIR" >&2
  exit 2
fi
bin=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
if [[ ! -x "$bin/initdb" ]]; then
  echo "no PostgreSQL server binaries found (set PG_BIN, or apt-get install postgresql)" >&2
  exit 1
fi
admin=team_admin
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
pgdata="$dir/pgdata"
as() {
  if [[ $(id -u) == 0 ]]; then runuser -u "${TEAM_SERVER_USER:-postgres}" -- "$@"; else "$@"; fi
}
url() {
  local port
  port=$(sed -n 4p "$pgdata/postmaster.pid")
  echo "postgresql://$admin:$(cat "$dir/admin-password")@127.0.0.1:$port/postgres"
}

case "$cmd" in
  start)
    if [[ ! -f "$pgdata/PG_VERSION" ]]; then
      if [[ $(id -u) == 0 ]]; then
        chown "${TEAM_SERVER_USER:-postgres}" "$dir"
        if ! as test -w "$dir"; then
          echo "${TEAM_SERVER_USER:-postgres} cannot reach $dir (a parent folder is private); use a folder under /tmp" >&2
          exit 1
        fi
      fi
      # The bootstrap superuser is reached only through the local socket in DIR (peer of
      # the server's own user); everyone else comes over TCP with a scram password.
      as "$bin/initdb" -D "$pgdata" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
        --encoding=UTF8 --locale=C.UTF-8 >/dev/null
      head -c 18 /dev/urandom | base64 | tr -d '/+=' >"$dir/admin-password"
      chmod 600 "$dir/admin-password"
    fi
    if [[ ! -f "$pgdata/postmaster.pid" ]]; then
      port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
      as "$bin/pg_ctl" -w -s -D "$pgdata" -l "$pgdata/server.log" \
        -o "-h 127.0.0.1 -p $port -k $pgdata -c max_connections=200" start
      # The administrator: LOGIN, CREATEROLE, CREATEDB, and nothing more.
      as "$bin/psql" -q -h "$pgdata" -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 \
        -v pw="$(cat "$dir/admin-password")" <<SQL >/dev/null
SELECT format('CREATE ROLE $admin LOGIN CREATEROLE CREATEDB PASSWORD %L', :'pw')
WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$admin') \gexec
SQL
    fi
    url
    ;;
  stop)
    if [[ -f "$pgdata/postmaster.pid" ]]; then as "$bin/pg_ctl" -w -s -D "$pgdata" -m fast stop; fi
    ;;
  url)
    url
    ;;
  *)
    echo "usage: $0 start|stop|url DIR" >&2
    exit 2
    ;;
esac
