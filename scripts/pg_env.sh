# Sourced by `make test`: if PostgreSQL server binaries are on this machine, start a throwaway
# cluster (trust auth, loopback only) and export MNEMARKET_TEST_PG_URL. The cluster lives in /tmp
# (the postgres user must reach it even when the checkout sits under a private home directory);
# its directory is derived from the checkout path and its port is a free ephemeral one the kernel
# hands out on 127.0.0.1 (tried again with another if taken before the server binds it), so two
# checkouts running `make test` at once do not collide. A cluster of this checkout left running
# is reused on the port it listens on (its postmaster.pid says which).
# Without binaries it does nothing and the PostgreSQL tests skip, unless MNEMARKET_REQUIRE_PG=1
# (set by .ci/run), which turns the skip into a failure. `pg_env_stop` stops a cluster this file
# started (make test calls it after pytest), so no server outlives the tests.
pg_env_stop() {
  if [ -n "${_pgstarted:-}" ]; then _run "$_pgbin/pg_ctl -D '$_pgdata' -m fast stop" >/dev/null 2>&1; fi
}
if [ -z "${MNEMARKET_TEST_PG_URL:-}" ]; then
  _pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  if [ -n "$_pgbin" ] && [ -x "$_pgbin/pg_ctl" ]; then
    _pghash=$(printf '%s' "$(pwd)" | cksum | cut -d' ' -f1)
    _pgdata="${TMPDIR:-/tmp}/mnemarket-pg-$_pghash"
    _pguser=$(id -un)
    if [ "$(id -u)" = 0 ]; then _pguser=postgres; fi
    _run() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi; }
    if [ ! -f "$_pgdata/PG_VERSION" ]; then
      mkdir -p "$_pgdata"; chmod 700 "$_pgdata"; [ "$(id -u)" = 0 ] && chown postgres "$_pgdata"
      _run "$_pgbin/initdb -D '$_pgdata' -U $_pguser --auth=trust" >/dev/null 2>&1 || echo "pg_env: initdb failed"
    fi
    if _run "$_pgbin/pg_ctl -D '$_pgdata' status" >/dev/null 2>&1; then
      _pgport=$(sed -n 4p "$_pgdata/postmaster.pid")
    else
      for _pgtry in 1 2 3; do
        _pgport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        if _run "$_pgbin/pg_ctl -D '$_pgdata' -l '$_pgdata/log' -w -o \"-p $_pgport -k '$_pgdata' -c listen_addresses=127.0.0.1 -c fsync=off\" start" >/dev/null 2>&1; then
          _pgstarted=1; break
        fi
      done
      [ -n "${_pgstarted:-}" ] || echo "pg_env: could not start PostgreSQL (see $_pgdata/log)"
    fi
    export MNEMARKET_TEST_PG_URL="postgresql+psycopg://$_pguser@127.0.0.1:$_pgport/postgres"
  fi
fi
