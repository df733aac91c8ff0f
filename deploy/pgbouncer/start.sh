#!/bin/sh
# The user list is written at start from the environment, so the password lives in no image layer.
set -eu
umask 077
printf '"%s" "%s"\n' "${PGBOUNCER_DB_USER:?}" "${PGBOUNCER_DB_PASSWORD:?}" > /var/lib/pgbouncer/userlist.txt
exec pgbouncer /etc/pgbouncer/pgbouncer.ini
