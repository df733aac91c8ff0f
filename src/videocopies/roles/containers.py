"""Dependency-injection containers: gateways per technology, and the use cases over them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

from dependency_injector import containers, providers

from videocopies.adapters.memory import (
    InMemoryPaymentProvider,
    InMemoryStore,
    InMemoryUnitOfWork,
    InProcessNotifier,
    ManualClock,
    SequentialIds,
)
from videocopies.adapters.memory.bot import InMemoryBotUsers, InMemoryInbox
from videocopies.adapters.postgres.bot import PostgresBotUsers, PostgresInbox
from videocopies.adapters.postgres.duties import PostgresDutyLeases
from videocopies.adapters.postgres.leases import PostgresLeaseRenewals
from videocopies.adapters.postgres.nodes import PostgresNodeRegistry
from videocopies.adapters.postgres.notifier import PostgresNotifier
from videocopies.adapters.postgres.objects import PostgresObjectRows
from videocopies.adapters.postgres.outbox import PostgresOutboxQueue
from videocopies.adapters.postgres.peek import PostgresQueuePeek
from videocopies.adapters.postgres.pool import make_pool
from videocopies.adapters.postgres.retention import PostgresTransientRows
from videocopies.adapters.postgres.unit_of_work import PostgresUnitOfWork
from videocopies.adapters.system import RandomIds, SystemClock
from videocopies.adapters.telegram.payments import UnconfiguredPaymentProvider
from videocopies.application import use_cases as uc
from videocopies.application.bot.conversation import BotSettings, Conversation
from videocopies.application.bot.inbox import InboxProcessor
from videocopies.domain.coins import LotKind
from videocopies.settings import Settings


class MemoryGateways(containers.DeclarativeContainer):
    """Everything in one process's memory: for unit tests, features and the demo."""

    store = providers.Singleton(InMemoryStore)
    uow = providers.Factory(InMemoryUnitOfWork, store=store)
    lease_uow = uow
    lease_renewals: providers.Object[None] = providers.Object(None)  # renewals take the whole path, the domain's
    clock = providers.Singleton(ManualClock)
    ids = providers.Singleton(SequentialIds)
    notifier = providers.Singleton(InProcessNotifier)
    payment_provider = providers.Singleton(InMemoryPaymentProvider)
    inbox = providers.Singleton(InMemoryInbox, store=store)
    bot_users = providers.Singleton(InMemoryBotUsers, store=store)


def _listen_url(config: dict[str, object]) -> str:
    return str(config.get("listen_url") or config["database_url"])


def _lease_pool(config: dict[str, object], main: object) -> object:
    """A pool of its own when `lease_pool_size` is set (core serving the Job API), else the main one."""
    size = config.get("lease_pool_size")
    if not size:
        return main
    return make_pool(
        str(config["database_url"]), max_size=int(size), name="videocopies-leases",  # type: ignore[call-overload]
        direct=bool(config.get("direct")), wait_s=float(config.get("wait_s") or 30.0),  # type: ignore[arg-type]
    )


def _jobs_keep_seed(config: dict[str, object]) -> bool:
    """Whether new jobs store their plans as the seed (revision 0030). A role passes what its
    schema check found; anything else asks the schema, once, when its first unit of work is made."""
    given = config.get("jobs_keep_seed")
    if given is not None:
        return bool(given)
    from videocopies.adapters.postgres import migrate

    return migrate.status(str(config["database_url"])).jobs_keep_seed


def _notifier(config: dict[str, object]) -> PostgresNotifier:
    return PostgresNotifier(_listen_url(config), safety_poll_s=float(config.get("safety_poll_s") or 1.0))  # type: ignore[arg-type]


class PostgresGateways(containers.DeclarativeContainer):
    """PostgreSQL (directly or through PgBouncer) with the real clock and identifiers."""

    config = providers.Configuration()
    # Opened and closed by the role (an async Resource would make every UoW a Future).
    pool = providers.Singleton(
        make_pool, url=config.database_url, max_size=config.pool_size.as_(int), direct=config.direct.as_(bool),
        wait_s=config.wait_s.as_(lambda v: float(v or 30.0)),
    )
    clock = providers.Singleton(SystemClock)
    jobs_keep_seed = providers.Singleton(_jobs_keep_seed, config=config)
    uow = providers.Factory(PostgresUnitOfWork, pool=pool, clock=clock, jobs_keep_seed=jobs_keep_seed)
    # Lease holders' writes (renew, checkpoint, complete) get connections of their own, so a
    # burst of claims can never make a renewal wait for a connection.
    lease_pool = providers.Singleton(_lease_pool, config=config, main=pool)
    lease_uow = providers.Factory(PostgresUnitOfWork, pool=lease_pool, clock=clock, jobs_keep_seed=jobs_keep_seed)
    lease_renewals = providers.Singleton(PostgresLeaseRenewals, pool=lease_pool)
    ids = providers.Singleton(RandomIds)
    # LISTEN needs a direct connection even when the pool goes through PgBouncer.
    notifier = providers.Singleton(_notifier, config=config)
    # Core sets the Telegram provider when it has a bot token; without one, refunds and
    # reconciliation say plainly that no provider is configured.
    payment_provider = providers.Singleton(UnconfiguredPaymentProvider)
    inbox = providers.Singleton(PostgresInbox, pool=pool, uow=uow.provider)
    bot_users = providers.Singleton(PostgresBotUsers, pool=pool)
    # What a core process runs beside the use cases (runtime/core_process.py).
    node_registry = providers.Singleton(PostgresNodeRegistry, pool)
    queue_peek = providers.Singleton(PostgresQueuePeek, pool)
    outbox_queue = providers.Singleton(PostgresOutboxQueue, pool)
    object_rows = providers.Singleton(PostgresObjectRows, pool)
    duty_leases = providers.Singleton(PostgresDutyLeases, pool)
    transient_rows = providers.Singleton(PostgresTransientRows, pool)


def _bot_settings(settings: Settings) -> BotSettings:
    rules = settings.grants
    return BotSettings(start_bonus=rules.start_bonus, start_bonus_valid_for=rules.valid_for(LotKind.START),
                       orders_per_hour=settings.orders_per_hour)


class UseCases(containers.DeclarativeContainer):
    gateways = providers.DependenciesContainer()
    settings: providers.Dependency[Settings] = providers.Dependency()

    grant_coins = providers.Singleton(uc.GrantCoins, uow=gateways.uow.provider, clock=gateways.clock, ids=gateways.ids)
    expire_coins = providers.Singleton(uc.ExpireCoins, uow=gateways.uow.provider, clock=gateways.clock)
    quote_order = providers.Singleton(
        uc.QuoteOrder,
        uow=gateways.uow.provider,
        clock=gateways.clock,
        ids=gateways.ids,
        policy=settings.provided.pricing,
        keys=settings.provided.quote_keys,
        ttl=settings.provided.quote_ttl,
    )
    confirm_order = providers.Singleton(
        uc.ConfirmOrder,
        uow=gateways.uow.provider,
        clock=gateways.clock,
        ids=gateways.ids,
        policy=settings.provided.pricing,
        keys=settings.provided.quote_keys,
        notifier=gateways.notifier,
        max_attempts=settings.provided.max_attempts,
        grants=settings.provided.grants,
    )
    cancel_order = providers.Singleton(uc.CancelOrder, uow=gateways.uow.provider, clock=gateways.clock)
    claim_job = providers.Singleton(
        uc.ClaimJob, uow=gateways.uow.provider, clock=gateways.clock, ids=gateways.ids,
        ttl=settings.provided.lease_ttl,
    )
    renew_lease = providers.Singleton(
        uc.RenewLease, uow=gateways.lease_uow.provider, clock=gateways.clock, ttl=settings.provided.lease_ttl,
        renewals=gateways.lease_renewals,
    )
    report_progress = providers.Singleton(uc.ReportProgress, uow=gateways.lease_uow.provider, clock=gateways.clock)
    checkpoint_copy = providers.Singleton(uc.CheckpointCopy, uow=gateways.lease_uow.provider, clock=gateways.clock)
    give_up_copy = providers.Singleton(uc.GiveUpCopy, uow=gateways.lease_uow.provider, clock=gateways.clock)
    complete_job = providers.Singleton(uc.CompleteJob, uow=gateways.lease_uow.provider, clock=gateways.clock)
    # On the claims' pool, not the lease writes': a burst of these must never make a renewal wait.
    complete_then_claim = providers.Singleton(
        uc.CompleteThenClaim, uow=gateways.uow.provider, clock=gateways.clock,
        complete=complete_job.provided.together, claim=claim_job,
    )
    fail_job = providers.Singleton(
        uc.FailJob, uow=gateways.lease_uow.provider, clock=gateways.clock, notifier=gateways.notifier
    )
    inspect_held_job = providers.Singleton(uc.InspectHeldJob, uow=gateways.lease_uow.provider, clock=gateways.clock)
    acknowledge_cancel = providers.Singleton(
        uc.AcknowledgeCancel, uow=gateways.lease_uow.provider, clock=gateways.clock
    )
    expire_leases = providers.Singleton(
        uc.ExpireLeases, uow=gateways.uow.provider, clock=gateways.clock, notifier=gateways.notifier
    )
    record_delivery = providers.Singleton(uc.RecordDelivery, uow=gateways.uow.provider, clock=gateways.clock)
    give_up_delivery = providers.Singleton(uc.GiveUpDelivery, uow=gateways.uow.provider, clock=gateways.clock)
    credit_payment = providers.Singleton(
        uc.CreditPayment, uow=gateways.uow.provider, clock=gateways.clock,
        valid_for=settings.provided.purchase_valid_for,
    )
    refund_payment = providers.Singleton(
        uc.RefundPayment, uow=gateways.uow.provider, clock=gateways.clock, provider=gateways.payment_provider
    )
    reconcile_payments = providers.Singleton(
        uc.ReconcilePayments,
        uow=gateways.uow.provider,
        provider=gateways.payment_provider,
        credit=credit_payment,
        coins_for=settings.provided.packages.coins_for,
        refunds=refund_payment,
        clock=gateways.clock,
        reverse_after=settings.provided.reverse_unknown_after,
    )
    confirm_payments = providers.Singleton(
        uc.ConfirmPayments, uow=gateways.uow.provider, provider=gateways.payment_provider, credit=credit_payment,
        coins_for=settings.provided.packages.coins_for,
    )
    payment_doubts = providers.Singleton(uc.PaymentDoubts, uow=gateways.uow.provider)
    # The bot's payment notices: claims the provider confirms, or credited as they come with no provider.
    take_payment = providers.Singleton(
        uc.TakePayment, uow=gateways.uow.provider, clock=gateways.clock, credit=credit_payment,
        confirm=confirm_payments,
    )
    reward_referral = providers.Singleton(
        uc.RewardReferral, uow=gateways.uow.provider, clock=gateways.clock, rules=settings.provided.grants
    )


class Bot(containers.DeclarativeContainer):
    """The bot's side of core: the conversation over the use cases, and the inbox processor."""

    gateways = providers.DependenciesContainer()
    use_cases = providers.DependenciesContainer()
    settings: providers.Dependency[Settings] = providers.Dependency()
    bot_settings = providers.Singleton(_bot_settings, settings)

    conversation = providers.Singleton(
        Conversation,
        uow=gateways.uow.provider,
        users=gateways.bot_users,
        clock=gateways.clock,
        policy=settings.provided.pricing,
        keys=settings.provided.quote_keys,
        grant_coins=use_cases.grant_coins,
        quote_order=use_cases.quote_order,
        confirm_order=use_cases.confirm_order,
        cancel_order=use_cases.cancel_order,
        settings=bot_settings,
        credit_payment=use_cases.take_payment,
        reward_referral=use_cases.reward_referral,
        packages=settings.provided.packages,
    )
    inbox_processor = providers.Singleton(
        InboxProcessor, inbox=gateways.inbox, conversation=conversation, clock=gateways.clock
    )


class InMemoryService(containers.DeclarativeContainer):
    """The whole application on in-memory adapters."""

    settings: providers.Dependency[Settings] = providers.Dependency()
    gateways = providers.Container(MemoryGateways)
    use_cases = providers.Container(UseCases, gateways=gateways, settings=settings)
    bot = providers.Container(Bot, gateways=gateways, use_cases=use_cases, settings=settings)


class PostgresService(containers.DeclarativeContainer):
    """The application on PostgreSQL: what core runs."""

    settings: providers.Dependency[Settings] = providers.Dependency()
    gateways = providers.Container(PostgresGateways)
    use_cases = providers.Container(UseCases, gateways=gateways, settings=settings)
    bot = providers.Container(Bot, gateways=gateways, use_cases=use_cases, settings=settings)


def postgres_service(settings: Settings, gateways: Mapping[str, object]) -> PostgresService:
    """The container over a database; `gateways`: PostgresGateways' configuration
    (`database_url`, `pool_size`, `direct`; core's `listen_url`, `lease_pool_size`, ...)."""
    container = PostgresService(settings=settings)
    config = cast(providers.Configuration, container.gateways.config)
    config.from_dict(dict(gateways))
    return container
