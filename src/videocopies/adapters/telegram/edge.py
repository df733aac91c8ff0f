"""Edge's Telegram I/O with aiogram, in parts:

- `receiver`: updates in (long polling or webhook), each stored in core's inbox before the
  offset moves on, readable or not; callback queries answered at once;
- `downloads`: a user's video fetched, checked and stored off the receive path;
- `sender`: core's outbox out, within Telegram's flood limits (`pacing`), replies before
  copies, each message reported with its outcome;
- `supervise`: every loop restarted when it fails, and counted.

Edge makes no business decision: what an update means is core's affair.
"""

from videocopies.adapters.telegram.botapi import LeanBotApi, Refusal, refusal_of
from videocopies.adapters.telegram.downloads import Downloads
from videocopies.adapters.telegram.pacing import Pacer, PacingSettings
from videocopies.adapters.telegram.receiver import ALLOWED_UPDATES, Receiver, WebhookReceiver, event_of
from videocopies.adapters.telegram.sender import BlockedChats, Sender
from videocopies.adapters.telegram.sources import SignedUrlSources, SourceStore, StoreSources
from videocopies.adapters.telegram.supervise import supervised

__all__ = [
    "ALLOWED_UPDATES", "BlockedChats", "Downloads", "LeanBotApi", "Pacer", "PacingSettings", "Receiver", "Refusal",
    "Sender", "SignedUrlSources", "SourceStore", "StoreSources", "WebhookReceiver", "event_of", "refusal_of",
    "supervised",
]
