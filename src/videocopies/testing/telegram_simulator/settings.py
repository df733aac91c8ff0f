"""How strictly the simulator plays Telegram: by default, as strictly as the real Bot API.

Telegram publishes no exact rate limits. The numbers below are the documented ones and the
ones maintained client libraries encode (docs/telegram-simulator.md lists each with its source):
- one chat: "avoid sending more than one message per second", short bursts allowed
  (Bots FAQ, "My bot is hitting limits");
- one bot: "about 30 messages per second" in total (same FAQ; grammY "Scaling Up IV: Flood Limits");
- over either, 429 with `retry_after`, and every call in that window is refused again
  (grammY's auto-retry and gramio treat the window as the whole bot's);
- the Bot API itself answers an occasional 502 Bad Gateway or answers slowly, to be retried with
  backoff (grammY auto-retry, python-telegram-bot's `NetworkError` handling).
"""

from __future__ import annotations

import attrs


def _none_or_positive(instance: object, attribute: attrs.Attribute, value: float | None) -> None:
    if value is not None and not value > 0:
        raise ValueError(f"{attribute.name} must be above 0, or None for no limit (got {value!r})")


def _share(instance: object, attribute: attrs.Attribute, value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{attribute.name} must be a share between 0 and 1 (got {value!r})")


@attrs.frozen
class Settings:
    mode: str = "cloud"  # "cloud" (api.telegram.org limits) or "local" (a local Bot API server)
    callback_deadline: float = 15.0  # seconds after a press within which answerCallbackQuery works
    pre_checkout_deadline: float = 10.0
    # Per-chat flood control as a token bucket: `chat_burst` sends at once, then `chat_rate` a second.
    chat_burst: int = attrs.field(default=3, validator=attrs.validators.ge(1))
    chat_rate: float | None = attrs.field(default=1.0, validator=_none_or_positive)
    # Bot-wide flood control: about 30 messages a second across all chats.
    global_burst: int = attrs.field(default=30, validator=attrs.validators.ge(1))
    global_rate: float | None = attrs.field(default=30.0, validator=_none_or_positive)
    # Shares of Bot API calls answered 502 Bad Gateway, and answered `slow_s` late; drawn from a
    # random.Random(seed), so a run that makes the same calls in the same order meets the same faults.
    fault_rate: float = attrs.field(default=0.01, validator=_share)
    slow_rate: float = attrs.field(default=0.01, validator=_share)
    slow_s: float = attrs.field(default=0.4, validator=attrs.validators.ge(0))
    seed: int = 0
    webhook_retry_delay: float = 0.2
    # Telegram never reuses an update id; a simulator restarted before the same bot's service
    # must not either, or the service takes its updates for ones it has already stored.
    first_update_id: int = 1

    def __attrs_post_init__(self) -> None:
        if self.fault_rate + self.slow_rate > 1.0:
            raise ValueError("fault_rate and slow_rate together must not exceed 1")

    @classmethod
    def lax(cls, **overrides) -> Settings:
        """No flood control and no faults. Only for a test or bench that says why it needs them off."""
        return cls(**(LAX | overrides))


# The lax profile as keyword settings, for `BotApiSimulator(**LAX, ...)`.
LAX: dict = {"chat_rate": None, "global_rate": None, "fault_rate": 0.0, "slow_rate": 0.0}
