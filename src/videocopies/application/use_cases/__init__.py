"""One use case per command; each owns one transaction (or a few, never across I/O)."""

from videocopies.application.ports import ClaimedJob, QueuedMessage
from videocopies.application.use_cases.cancel_order import CancelOrder, CancelOrderCommand
from videocopies.application.use_cases.claim_job import ClaimJob, ClaimJobCommand
from videocopies.application.use_cases.coins import ExpireCoins, GrantCoins, GrantCoinsCommand, Granted
from videocopies.application.use_cases.complete_jobs import CompleteJobs
from videocopies.application.use_cases.complete_then_claim import CompleteThenClaim, CompleteThenClaimCommand
from videocopies.application.use_cases.confirm_order import ConfirmOrder, ConfirmOrderCommand
from videocopies.application.use_cases.finish_job import (
    AcknowledgeCancel,
    CompleteJob,
    CompleteJobCommand,
    ExpireLeases,
    FailJob,
    FailJobCommand,
)
from videocopies.application.use_cases.grants import RewardReferral
from videocopies.application.use_cases.lease_writes import (
    CheckpointCopy,
    CheckpointCopyCommand,
    GiveUpCopy,
    GiveUpCopyCommand,
    HeldJobView,
    InspectHeldJob,
    RenewLease,
    RenewLeaseCommand,
    ReportProgress,
    ReportProgressCommand,
)
from videocopies.application.use_cases.payments import (
    ConfirmPayments,
    CreditPayment,
    CreditPaymentCommand,
    PaymentDoubts,
    RefundPayment,
    RefundPaymentCommand,
    TakePayment,
)
from videocopies.application.use_cases.quote_order import QuoteOrder, QuoteOrderCommand
from videocopies.application.use_cases.reconciliation import ReconcilePayments, ReconciliationResult
from videocopies.application.use_cases.record_delivery import GiveUpDelivery, RecordDelivery, RecordDeliveryCommand
from videocopies.application.use_cases.undeliverable import (
    GiveUpMessages,
    Stopped,
    StopServingUser,
    StopServingUserCommand,
)

__all__ = [
    "AcknowledgeCancel", "CancelOrder", "CancelOrderCommand", "CheckpointCopy",
    "CheckpointCopyCommand", "ClaimJob", "ClaimJobCommand", "ClaimedJob", "CompleteJob",
    "CompleteJobCommand", "CompleteJobs", "CompleteThenClaim", "CompleteThenClaimCommand",
    "ConfirmOrder", "ConfirmOrderCommand", "ConfirmPayments", "CreditPayment",
    "CreditPaymentCommand", "ExpireCoins", "ExpireLeases", "FailJob", "FailJobCommand",
    "GiveUpCopy", "GiveUpCopyCommand",
    "GiveUpDelivery", "GiveUpMessages", "GrantCoins", "GrantCoinsCommand", "Granted", "HeldJobView",
    "InspectHeldJob", "PaymentDoubts", "QuoteOrder",
    "QuoteOrderCommand", "ReconcilePayments", "ReconciliationResult", "RefundPayment", "RefundPaymentCommand",
    "QueuedMessage", "RewardReferral", "StopServingUser", "StopServingUserCommand", "Stopped", "TakePayment",
    "RecordDelivery", "RecordDeliveryCommand", "RenewLease", "RenewLeaseCommand",
    "ReportProgress", "ReportProgressCommand",
]
