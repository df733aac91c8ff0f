"""The demo walks the seed's order end to end and ends on the seed's figures."""

import io

from videocopies.demo.walk import Demo


async def test_the_demo_ends_on_the_seed_figures():
    out = io.StringIO()

    code = await Demo(out).run()

    text = out.getvalue()
    assert code == 0, text
    assert "balance: available 42, reserved 0, debited 8, expired 0" in text
    assert "told the user: order cancelled, charged 8, returned 12" in text
    assert "refused (stale_token)" in text
    assert "first notification credited: True; duplicate credited: False" in text
    assert "MISMATCH" not in text
