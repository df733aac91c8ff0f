"""The bodies of core's API for edge: the updates it stores, the messages it sends, its reports."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from videocopies.adapters.http.shared import IDENTIFIER, MAX_BYTES, NO_NUL, Body, StatName
from videocopies.application.ports import REASON_CHARS
from videocopies.domain.objects.keys import SOURCE_KEY_PATTERN


class UserIn(BaseModel):
    id: int = Field(ge=1, le=2**53)
    language_code: str | None = Field(None, max_length=16, pattern=IDENTIFIER)
    first_name: str | None = Field(None, max_length=256, pattern=NO_NUL)


class VideoIn(Body):
    file_id: str = Field(min_length=1, max_length=256, pattern=IDENTIFIER)
    size: int = Field(ge=0, le=MAX_BYTES)
    duration_s: float = Field(ge=0, le=86_400)
    width: int = Field(ge=0, le=16_384)
    height: int = Field(ge=0, le=16_384)
    mime_type: str | None = Field(None, max_length=100, pattern=r"^[A-Za-z0-9.+/-]+$")
    source_key: str | None = Field(None, max_length=512, pattern=SOURCE_KEY_PATTERN)
    sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")
    file_unique_id: str | None = Field(None, min_length=1, max_length=256, pattern=IDENTIFIER)
    refusal: Literal["too_big", "unavailable", "not_a_video", "too_long", "too_large_frame", "unreadable"] | None = (
        Field(None, description="Why edge did not store the video (source_key is then null).")
    )
    fps: float = Field(0.0, ge=0, le=1000, description="Frames a second; 0 when unknown.")
    probed: bool = Field(False, description="duration_s, width, height and fps were measured on the file itself.")
    fetching: bool = Field(
        False, description="Edge is still fetching the file: the event (and its user's later ones) waits until edge "
                           "completes it through /v1/inbox/videos.",
    )


class PaymentIn(Body):
    """Telegram's successful_payment, as edge received it."""

    charge_id: str = Field(min_length=1, max_length=256, pattern=IDENTIFIER)
    total_amount: int = Field(ge=1, le=10**9)
    currency: str = Field(pattern=r"^[A-Z]{3}$")
    invoice_payload: str = Field(max_length=128, pattern=NO_NUL)


class EventIn(Body):
    update_id: int = Field(ge=0, le=2**53)
    user: UserIn
    kind: Literal["text", "video", "button", "payment", "unreadable"]
    text: str | None = Field(None, max_length=4096, pattern=NO_NUL)
    data: str | None = Field(None, min_length=1, max_length=64, pattern=NO_NUL)
    message_id: int | None = Field(None, ge=1, le=2**53, description="Kind `button`: the message it is on.")
    bot: str | None = Field(None, min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_]+$",
                            description="Kind `text`: the bot's username (what an invite link names).")
    video: VideoIn | None = None
    payment: PaymentIn | None = None
    reason: str | None = Field(
        None, max_length=REASON_CHARS, pattern=NO_NUL, description="Kind `unreadable`: why edge could not read it."
    )


class PreCheckoutIn(Body):
    user: UserIn
    currency: str = Field(max_length=8, pattern=r"^[A-Z]{3}$")
    total_amount: int = Field(ge=1, le=10**9)
    invoice_payload: str = Field(max_length=128, pattern=NO_NUL)


class PreCheckoutOut(BaseModel):
    ok: bool
    error_message: str | None = None


class InboxIn(Body):
    events: list[Any] = Field(
        min_length=1, max_length=1000,
        description="Each an EventIn, judged on its own: one that does not validate is kept as `unreadable` "
                    "with the reason (keyed by its update_id when that is readable), never refusing the page.",
    )


class FetchedVideoIn(Body):
    update_id: int = Field(ge=0, le=2**53)
    user_id: int = Field(ge=1, le=2**53)
    video: VideoIn


class FetchedVideosIn(Body):
    videos: list[FetchedVideoIn] = Field(min_length=1, max_length=100)


class FetchingIn(Body):
    limit: int = Field(100, ge=1, le=1000)


class InboxOut(BaseModel):
    stored: int  # events new to the inbox (unreadable ones included)
    unreadable: int  # events of this page kept, or only counted, as unreadable


class SourceUploadIn(Body):
    user_id: int = Field(ge=1, le=2**53)
    update_id: int = Field(ge=0, le=2**53)
    size: int = Field(ge=0, le=MAX_BYTES)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class ButtonOut(BaseModel):
    text: str
    data: str


class VideoOut(BaseModel):
    key: str
    url: str | None


class InvoiceOut(BaseModel):
    title: str
    description: str
    payload: str
    label: str
    stars: int


class ProgressOut(BaseModel):
    """The message shows an order's progress: `carrier`, it is the message later states edit;
    otherwise edit message `edit` (unknown: null) or the one this edge last sent for the order.
    Only the newest unsent state of an order is worth sending; `final` states never drop."""

    order_id: str
    carrier: bool = False
    edit: int | None = None
    final: bool = False
    rendering: bool = False


class MessageOut(BaseModel):
    id: int
    chat_id: int
    kind: str
    text: str
    buttons: list[list[ButtonOut]]
    video: VideoOut | None
    invoice: InvoiceOut | None = None
    progress: ProgressOut | None = None
    buttons_until: float | None = Field(None, description="When the sent message's buttons lapse (seconds since the "
                                                         "epoch): a quote's price expires. Core then queues an "
                                                         "`unbutton` message for it; for edges that keep a timer.")
    unbutton: int | None = Field(None, description="Before sending, take the buttons off this message (the one "
                                                    "a spent button was pressed on, or whose buttons lapsed); "
                                                    "once is enough. Kind `unbutton`: only that, nothing is sent.")


class ClaimOut(BaseModel):
    messages: list[MessageOut]


class OutboxClaimIn(Body):
    limit: int = Field(20, ge=1, le=500)
    wait_s: float = Field(0.0, ge=0.0, le=60.0)
    hold_s: float = Field(60.0, ge=5.0, le=600.0)  # unreported this long: another edge may send them
    unbuttons: bool = Field(
        False, description="This edge takes the buttons off a message for a message of kind `unbutton` (and sends "
                           "nothing). An edge that does not say so has those closed at once, unsent.",
    )


class SentIn(Body):
    message_id: int | None = Field(None, ge=0, le=2**53)
    file_id: str | None = Field(None, max_length=256, pattern=IDENTIFIER)
    error: str | None = Field(None, max_length=1000, pattern=NO_NUL, description="Given up: Telegram refused it.")
    moved: bool | None = Field(
        None, description="A progress edit whose message could not be edited was sent as a new message, "
                          "`message_id`: the order's later edits go to it.",
    )
    refusal: Literal["blocked", "chat_not_found", "too_large", "rejected", "gave_up"] | None = Field(
        None, description="What kind of refusal `error` is. blocked, chat_not_found: the user's open orders are "
                          "cancelled and their other messages given up; too_large: the copy is not charged and "
                          "the user is told.",
    )


class ReportIn(SentIn):
    id: int = Field(ge=1, le=2**62)


class ReportsIn(Body):
    reports: list[ReportIn] = Field(min_length=1, max_length=500)

class DutyIn(Body):
    token: str = Field(min_length=16, max_length=128, pattern=IDENTIFIER)
    stats: dict[StatName, Annotated[int, Field(ge=0, le=2**53)]] | None = Field(
        None, max_length=256, description="Edge's own counters (unreadable, loop_restarts, flood_pauses, ...), "
                                         "shown in /metrics as videocopies_edge_<name>{node}.",
    )


class DutyOut(BaseModel):
    held: bool  # True: the caller holds the duty until `lease_until`
    holder: str
    lease_until: datetime
    ttl_s: float
    term: int


class RetryIn(Body):
    after_s: float = Field(ge=0.0, le=3600.0)
    error: str = Field("", max_length=1000, pattern=NO_NUL)
