"""Edge's Telegram I/O with aiogram, in parts:

- `receiver`: updates in (long polling, or pushed to `webhook`), each reduced to an inbox event
  (`updates`) and stored in core's inbox before the offset moves on, readable or not; callback
  queries answered at once;
- `downloads`: a user's video fetched, checked and stored off the receive path;
- `sender`: core's outbox out, within Telegram's flood limits (`pacing`), replies before
  copies (`turns`), each message sent (`delivery`) and reported with its outcome; chats that
  blocked the bot (`blocked`) get nothing more;
- `supervise`: every loop restarted when it fails, and counted.

Edge makes no business decision: what an update means is core's affair.
"""

from videocopies.adapters.telegram.blocked import BlockedChats
from videocopies.adapters.telegram.botapi import LeanBotApi, Refusal, refusal_of
from videocopies.adapters.telegram.downloads import Downloads
from videocopies.adapters.telegram.pacing import Pacer, PacingSettings
from videocopies.adapters.telegram.receiver import ALLOWED_UPDATES, Receiver
from videocopies.adapters.telegram.sender import Sender
from videocopies.adapters.telegram.sources import SignedUrlSources, SourceStore, StoreSources
from videocopies.adapters.telegram.supervise import supervised
from videocopies.adapters.telegram.updates import event_of
from videocopies.adapters.telegram.webhook import WebhookReceiver

__all__ = [
    "ALLOWED_UPDATES", "BlockedChats", "Downloads", "LeanBotApi", "Pacer", "PacingSettings", "Receiver", "Refusal",
    "Sender", "SignedUrlSources", "SourceStore", "StoreSources", "WebhookReceiver", "event_of", "refusal_of",
    "supervised",
]
