"""Ports: what the application needs from the world, named for their role.

One module per concern; every name is re-exported here, so a caller imports
`from videocopies.application.ports import X` whatever module X lives in.
"""

from videocopies.application.ports.bot import (
    REASON_CHARS,
    UNREADABLE,
    VIDEO_REFUSALS,
    BotUser,
    BotUsers,
    Inbox,
    InboxEvent,
    PaidInvoice,
    StoredVideo,
    language_of,
)
from videocopies.application.ports.control import ControlReadModel, ServerInventory
from videocopies.application.ports.duties import DutyLeases, TransientRows
from videocopies.application.ports.nodes import Node, NodeExists, NodeRegistry
from videocopies.application.ports.objects import (
    CoreFigures,
    CoreUnreachable,
    ListedStore,
    NodeFigures,
    ObjectRows,
    ObjectTallies,
    ObjectTally,
    ScratchUse,
    StoreDisk,
)
from videocopies.application.ports.outbox import OutboxQueue, QueuedMessage, UnreachableUsers
from videocopies.application.ports.queue import ClaimedJob, DiskSpace, JobFiles, JobLeases
from videocopies.application.ports.unit_of_work import (
    CapacitySlots,
    Clock,
    CoinAccountRepository,
    CopyInspector,
    CopyLook,
    GrantLog,
    GrantRecord,
    Ids,
    JobRepository,
    Notifier,
    ObjectStore,
    OrderRepository,
    Outbox,
    OutboxMessage,
    PaymentClaims,
    PaymentProvider,
    PaymentRepository,
    Prober,
    ProbeResult,
    ReceiptRepository,
    ReferralRepository,
    RefundRepository,
    RefusedWrite,
    RefusedWriteLog,
    ReversalRepository,
    Transcoder,
    UnitOfWork,
)

__all__ = [
    "ControlReadModel", "CoreFigures", "CoreUnreachable", "DutyLeases", "ListedStore", "Node", "NodeExists",
    "NodeFigures", "NodeRegistry", "ObjectRows", "ObjectTallies", "ObjectTally", "ScratchUse", "ServerInventory",
    "StoreDisk", "TransientRows",
    "ClaimedJob", "DiskSpace", "JobFiles", "JobLeases", "OutboxQueue", "QueuedMessage", "UnreachableUsers",
    "REASON_CHARS", "UNREADABLE", "VIDEO_REFUSALS", "BotUser", "BotUsers", "CapacitySlots", "Clock",
    "CoinAccountRepository", "CopyInspector", "CopyLook", "GrantLog", "GrantRecord", "Ids", "Inbox",
    "InboxEvent", "JobRepository", "Notifier", "ObjectStore", "OrderRepository", "Outbox", "OutboxMessage",
    "PaidInvoice", "PaymentClaims", "PaymentProvider", "PaymentRepository", "Prober", "ProbeResult",
    "ReceiptRepository", "ReferralRepository", "RefundRepository", "RefusedWrite", "RefusedWriteLog",
    "ReversalRepository", "StoredVideo", "Transcoder", "UnitOfWork", "language_of",
]
