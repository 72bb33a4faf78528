#!/bin/sh
# Debian's PostgreSQL server binaries for the tests: tests/support/postgres.py runs initdb + pg_ctl in a temporary
# directory, so the store and API tests run against PostgreSQL as well as SQLite. Any cluster the package sets up
# itself is not used.
set -eu
if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || [ -n "${AXIOM_POSTGRESQL_BIN:-}" ]; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "No PostgreSQL binaries and no apt-get to install them: install PostgreSQL and set AXIOM_POSTGRESQL_BIN" \
        "to its bin directory (or AXIOM_TEST_SKIP_POSTGRESQL=1 to skip those tests)." >&2
    exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
# Package lists may be missing or stale on a fresh machine: refresh them only when the first try fails.
$SUDO apt-get install -y postgresql || { $SUDO apt-get update && $SUDO apt-get install -y postgresql; }
