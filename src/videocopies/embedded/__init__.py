"""Servers started from the binaries installed on this machine, each private to one process
tree and listening on loopback: PostgreSQL (`postgres`) and a streaming standby of it
(`standby`), PgBouncer (`pgbouncer`), SeaweedFS with an S3 identity (`seaweedfs`).

They implement no port, so they are not adapters; and they are not `videocopies.testing`
either, because shipped commands start them: `videocopies all-in-one` keeps its database in
an embedded PostgreSQL, `videocopies copies make` runs the whole path on one, and
`videocopies backup verify` restores an archive into a scratch one, never the working
database. Tests and benchmarks use the same servers. The package imports nothing of
videocopies, so any layer may start one.
"""
