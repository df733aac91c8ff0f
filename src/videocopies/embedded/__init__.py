"""Servers started from the binaries installed on this machine, each private to one process
tree and listening on loopback: PostgreSQL (`postgres`) and a streaming standby of it
(`standby`), PgBouncer (`pgbouncer`), SeaweedFS with an S3 identity (`seaweedfs`).

They implement no port, so they are not adapters. Nor are they `videocopies.testing`,
because shipped commands start the PostgreSQL one: `videocopies all-in-one` keeps its
database in it, `videocopies copies make` runs the whole path on one, and `videocopies
backup verify` restores an archive into a scratch one, never the working database. The
standby, PgBouncer and SeaweedFS are started by tests and benchmarks only; they live here
because they are the same kind of thing, built on the same helpers (`local`: a private
directory, a free port, the service user, one lifecycle). The package imports nothing of
videocopies, so any layer may start one.
"""
