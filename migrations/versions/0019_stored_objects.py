"""Every object in the store has a row: its key, kind, size, SHA-256 and state, and when each
state began, so the lifecycle duty can delete sources and copies once they are no longer needed.

`stored_objects`: one row per key. `kind` is `source` (a video a user sent) or `copy`;
`state` is `stored`, `delivered` (a copy the user received) or `deleted` (gone from the store:
set only after the store's delete succeeded). `released_at` is when the lifecycle duty found
nothing that needs the object any more (a copy: its order closed; a source: no open order and
no live quote uses it); a source used again has it cleared.

The rows are written by triggers in the transaction of the fact they record, whatever code
level writes it: a source when its inbox video event holds the stored file (insert, or the
completion of a fetching event), a copy with its checkpoint, and a copy's delivery when its
order's `copy_states` says delivered. Existing objects get their rows here (copies from their
checkpoints, sources from the inbox, the orders and the users' waiting videos, so that a
source's row is never younger than its orders), and the stray sweep finds none of them.

Code of level 5 runs on this schema unchanged: it never reads the table, and its writes record
their objects through the triggers. Level 6 reads it (the lifecycle duty, the figures), so it
refuses a database without it.

Revision ID: 0019
Revises: 0018
"""

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

code_levels = (5, 6)  # level 6 reads stored_objects; level 5 writes its rows through the triggers

_TRIGGERS = r"""
CREATE FUNCTION videocopies_source_stored() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    INSERT INTO stored_objects (key, kind, user_id, size, sha256, state, stored_at)
    VALUES (NEW.payload->'video'->>'source_key', 'source', NEW.user_id, (NEW.payload->'video'->>'size')::bigint,
            NEW.payload->'video'->>'sha256', 'stored', now())
        ON CONFLICT (key) DO NOTHING;
    RETURN NULL;
END
$fn$;
CREATE TRIGGER inbox_source_stored AFTER INSERT OR UPDATE OF payload ON inbox FOR EACH ROW
    WHEN (NEW.kind = 'video' AND NEW.payload->'video'->>'source_key' IS NOT NULL
          AND NOT coalesce((NEW.payload->'video'->>'fetching')::boolean, false))
    EXECUTE FUNCTION videocopies_source_stored();

CREATE FUNCTION videocopies_copy_stored() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    INSERT INTO stored_objects (key, kind, user_id, order_id, size, sha256, state, stored_at)
    SELECT NEW.object_key, 'copy', o.user_id, o.order_id, NEW.size, NEW.sha256, 'stored', now()
      FROM jobs j JOIN orders o USING (order_id) WHERE j.job_id = NEW.job_id
        ON CONFLICT (key) DO NOTHING;
    RETURN NULL;
END
$fn$;
CREATE TRIGGER job_checkpoints_copy_stored AFTER INSERT ON job_checkpoints FOR EACH ROW
    WHEN (NEW.failure IS NULL) EXECUTE FUNCTION videocopies_copy_stored();

CREATE FUNCTION videocopies_copy_delivered() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    UPDATE stored_objects SET state = 'delivered', delivered_at = now()
     WHERE key IN (SELECT c->>1 FROM jsonb_array_elements(NEW.copy_states) AS c
                    WHERE c->>0 = 'delivered' AND c->>1 IS NOT NULL)
       AND state = 'stored';
    RETURN NULL;
END
$fn$;
CREATE TRIGGER orders_copy_delivered AFTER UPDATE OF copy_states ON orders FOR EACH ROW
    WHEN (OLD.copy_states IS DISTINCT FROM NEW.copy_states
          AND NEW.copy_states::text LIKE '%"delivered"%')
    EXECUTE FUNCTION videocopies_copy_delivered();
"""

# Objects stored before this revision: without rows the stray sweep would remove them.
_BACKFILL = r"""
INSERT INTO stored_objects (key, kind, user_id, order_id, size, sha256, state, stored_at, delivered_at)
SELECT c.object_key, 'copy', o.user_id, o.order_id, c.size, c.sha256,
       CASE WHEN o.copy_states->c.idx->>0 = 'delivered' THEN 'delivered' ELSE 'stored' END, c.created_at,
       CASE WHEN o.copy_states->c.idx->>0 = 'delivered' THEN now() END
  FROM job_checkpoints c JOIN jobs j USING (job_id) JOIN orders o USING (order_id)
 WHERE c.failure IS NULL
    ON CONFLICT (key) DO NOTHING;
INSERT INTO stored_objects (key, kind, user_id, size, sha256, state, stored_at)
SELECT DISTINCT ON (payload->'video'->>'source_key') payload->'video'->>'source_key', 'source', user_id,
       (payload->'video'->>'size')::bigint, payload->'video'->>'sha256', 'stored', received_at
  FROM inbox
 WHERE kind = 'video' AND payload->'video'->>'source_key' IS NOT NULL
   AND NOT coalesce((payload->'video'->>'fetching')::boolean, false)
    ON CONFLICT (key) DO NOTHING;
INSERT INTO stored_objects (key, kind, user_id, size, state, stored_at)
SELECT source_key, 'source', min(user_id), max(source_bytes), 'stored', min(created_at)
  FROM orders GROUP BY source_key
    ON CONFLICT (key) DO NOTHING;
INSERT INTO stored_objects (key, kind, user_id, size, sha256, state, stored_at)
SELECT source->>'source_key', 'source', user_id, (source->>'size')::bigint, source->>'sha256', 'stored', now()
  FROM bot_users WHERE source->>'source_key' IS NOT NULL
    ON CONFLICT (key) DO NOTHING;
"""


def _at(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "stored_objects",
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("kind", sa.Text(), nullable=False),
        sa.Column("user_id", sa.BigInteger(), nullable=True),
        sa.Column("order_id", sa.Text(), nullable=True),
        sa.Column("size", sa.BigInteger(), nullable=True),
        sa.Column("sha256", sa.Text(), nullable=True),
        sa.Column("state", sa.Text(), nullable=False),
        _at("stored_at"),
        _at("delivered_at", nullable=True),
        _at("released_at", nullable=True),
        _at("deleted_at", nullable=True),
        sa.CheckConstraint("kind IN ('source', 'copy')", name="ck_stored_objects_kind"),
        sa.CheckConstraint("state IN ('stored', 'delivered', 'deleted')", name="ck_stored_objects_state"),
        sa.PrimaryKeyConstraint("key", name="pk_stored_objects"),
    )
    op.create_index("ix_stored_objects_order_id", "stored_objects", ["order_id"])
    op.create_index(
        "ix_stored_objects_in_use", "stored_objects", ["stored_at"],
        postgresql_where=sa.text("state <> 'deleted' AND released_at IS NULL"),
    )
    op.create_index(
        "ix_stored_objects_released", "stored_objects", ["released_at"],
        postgresql_where=sa.text("state = 'stored' AND released_at IS NOT NULL"),
    )
    op.create_index(
        "ix_stored_objects_delivered", "stored_objects", ["delivered_at"],
        postgresql_where=sa.text("state = 'delivered'"),
    )
    op.create_index(
        "ix_stored_objects_deleted", "stored_objects", ["deleted_at"], postgresql_where=sa.text("state = 'deleted'")
    )
    op.execute(_TRIGGERS)
    op.execute(_BACKFILL)


def downgrade() -> None:
    op.execute("DROP TRIGGER orders_copy_delivered ON orders")
    op.execute("DROP TRIGGER job_checkpoints_copy_stored ON job_checkpoints")
    op.execute("DROP TRIGGER inbox_source_stored ON inbox")
    op.execute("DROP FUNCTION videocopies_copy_delivered()")
    op.execute("DROP FUNCTION videocopies_copy_stored()")
    op.execute("DROP FUNCTION videocopies_source_stored()")
    op.drop_index("ix_stored_objects_deleted", table_name="stored_objects")
    op.drop_index("ix_stored_objects_delivered", table_name="stored_objects")
    op.drop_index("ix_stored_objects_released", table_name="stored_objects")
    op.drop_index("ix_stored_objects_in_use", table_name="stored_objects")
    op.drop_index("ix_stored_objects_order_id", table_name="stored_objects")
    op.drop_table("stored_objects")
