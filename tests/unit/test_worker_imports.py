"""The worker role holds no database credentials and loads no SQL driver: importing it
must not pull in psycopg, SQLAlchemy, alembic, boto3 or FastAPI."""

from __future__ import annotations

import subprocess
import sys

FORBIDDEN = ("psycopg", "psycopg_pool", "sqlalchemy", "alembic", "boto3", "botocore", "fastapi")


def test_the_worker_role_loads_no_sql_driver() -> None:
    probe = (
        "import sys, videocopies.roles.worker\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({FORBIDDEN!r})))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"
