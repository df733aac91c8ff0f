"""Drop `videocopies_require` (0003): nothing calls it since the write set moved into
videocopies_apply (0009), and it was the last function raising the catch-all SQLSTATE VC001.
Every refusal the database raises now has its own SQLSTATE (0023).

Revision ID: 0024
Revises: 0023
"""

from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

code_levels = (8, 8)

# As 0003 created it, for the downgrade.
REQUIRE = """
CREATE FUNCTION videocopies_require(changed_rows bigint, expected_rows bigint, what text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF changed_rows IS DISTINCT FROM expected_rows THEN
        RAISE EXCEPTION USING ERRCODE = 'VC001', MESSAGE = what;
    END IF;
END
$$
"""


def upgrade() -> None:
    op.execute("DROP FUNCTION videocopies_require(bigint, bigint, text)")


def downgrade() -> None:
    op.execute(REQUIRE)
