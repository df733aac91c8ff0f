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
    InboxTurn,
    PaidInvoice,
    StoredVideo,
    language_of,
)
from videocopies.application.ports.clock import Clock, Ids
from videocopies.application.ports.control import ControlReadModel, ServerInventory
from videocopies.application.ports.duties import DutyLeases, TransientRows
from videocopies.application.ports.media import CopyInspector, CopyLook, Prober, ProbeResult, Transcoder
from videocopies.application.ports.nodes import Node, NodeExists, NodeRegistry
from videocopies.application.ports.objects import (
    CoreAnswer,
    CoreFigures,
    CoreUnreachable,
    ListedStore,
    NodeFigures,
    ObjectRows,
    ObjectStore,
    ObjectTallies,
    ObjectTally,
    ScratchUse,
    StoreDisk,
)
from videocopies.application.ports.outbox import OutboxQueue, QueuedMessage, UnreachableUsers
from videocopies.application.ports.payments import PaymentProvider
from videocopies.application.ports.queue import ClaimedJob, DiskSpace, JobFiles, JobLeases, LeaseRenewals, Notifier
from videocopies.application.ports.unit_of_work import (
    CapacitySlots,
    CoinAccountRepository,
    GrantLog,
    GrantRecord,
    JobRepository,
    OrderRepository,
    Outbox,
    OutboxMessage,
    PaymentClaims,
    PaymentRepository,
    ReceiptRepository,
    ReferralRepository,
    RefundRepository,
    RefusedWrite,
    RefusedWriteLog,
    ReversalRepository,
    UnitOfWork,
)

__all__ = [
    "BotUser", "BotUsers", "CapacitySlots", "ClaimedJob", "Clock", "CoinAccountRepository", "ControlReadModel",
    "CopyInspector", "CopyLook", "CoreAnswer", "CoreFigures", "CoreUnreachable", "DiskSpace", "DutyLeases", "GrantLog",
    "GrantRecord", "Ids", "Inbox", "InboxEvent", "InboxTurn", "JobFiles", "JobLeases", "JobRepository",
    "language_of", "LeaseRenewals", "ListedStore", "Node", "NodeExists", "NodeFigures", "NodeRegistry", "Notifier",
    "ObjectRows",
    "ObjectStore", "ObjectTallies", "ObjectTally", "OrderRepository", "Outbox", "OutboxMessage", "OutboxQueue",
    "PaidInvoice", "PaymentClaims", "PaymentProvider", "PaymentRepository", "Prober", "ProbeResult",
    "QueuedMessage", "REASON_CHARS", "ReceiptRepository", "ReferralRepository", "RefundRepository", "RefusedWrite",
    "RefusedWriteLog", "ReversalRepository", "ScratchUse", "ServerInventory", "StoreDisk", "StoredVideo",
    "Transcoder", "TransientRows", "UnitOfWork", "UnreachableUsers", "UNREADABLE", "VIDEO_REFUSALS",
]
