"""Tools that stand in for the outside world in tests, benchmarks and the demo: the Telegram
Bot API simulator (`telegram_simulator`), run in-process or as `python -m
videocopies.testing.telegram_simulator`.

Shipped in the wheel, so the demo runs from an installed package, but no production role
imports it. The one exception is deliberate: `videocopies all-in-one` with no bot token is a
first look on one machine, and starts the simulator in Telegram's place (it says so when it
starts); given a token it serves real Telegram and never starts it. The embedded servers
are in `videocopies.embedded`, not here, because shipped commands start them too.
"""
