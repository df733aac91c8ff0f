#!/bin/sh
# compose.yaml's one-shot `setup`: the schema, the bucket and one token per node, each made once.
# It runs on every `docker compose up`; what exists already is kept.
set -eu
umask 077  # the tokens are read by the nodes, which run as the same user
TOKENS=/var/lib/videocopies/tokens

# `db init` refuses a database that has a schema: then it is brought up to date instead.
videocopies db init || videocopies db upgrade

# The bucket core signs URLs for, from the same VIDEOCOPIES_S3_* variables core reads.
python - <<'PYTHON'
import asyncio, os
from videocopies.adapters.objectstore.s3 import S3ObjectStore
from videocopies.settings.links import S3Link
s3 = S3Link.from_env(os.environ)
asyncio.run(S3ObjectStore(s3.bucket, s3.endpoint, s3.access_key, s3.secret_key).ensure_bucket())
PYTHON

# A token is printed once; a node whose file is lost must be revoked (`videocopies nodes revoke
# NAME`) before it is issued again.
[ -s "$TOKENS/edge-1" ] || videocopies nodes add edge-1 --role edge > "$TOKENS/edge-1"
[ -s "$TOKENS/edge-2" ] || videocopies nodes add edge-2 --role edge > "$TOKENS/edge-2"
[ -s "$TOKENS/worker-1" ] || videocopies nodes add worker-1 --role worker > "$TOKENS/worker-1"
[ -s "$TOKENS/worker-2" ] || videocopies nodes add worker-2 --role worker > "$TOKENS/worker-2"
