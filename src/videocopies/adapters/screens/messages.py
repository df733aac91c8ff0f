"""The bot's messages by name, in English; their Russian (and English) words live in the message
catalogs under videocopies/locale, extracted from this module by `make i18n-extract`.

A placeholder written `{total:coins}` shows its number with the counted noun `coins` ("1 coin",
"5 монет"); a message that needs another grammatical case for its number is a plural of its own
(`Nn_`), chosen by the value its third argument names."""

from __future__ import annotations

import attrs


@attrs.frozen
class Message:
    singular: str
    plural: str | None = None
    count: str | None = None  # the value whose number chooses the plural form

    @property
    def msgid(self) -> str | tuple[str, str]:
        return self.singular if self.plural is None else (self.singular, self.plural)


def N_(singular: str) -> Message:  # noqa: N802 (gettext's name for a message marked, translated later)
    return Message(singular)


def Nn_(singular: str, plural: str, count: str) -> Message:  # noqa: N802
    return Message(singular, plural, count)


# Counted nouns: `{value:coins}` renders the value with NOUNS["coins"].
NOUNS: dict[str, Message] = {
    "coins": Nn_("{n} coin", "{n} coins", "n"),
    "coins_each": Nn_("{n} coin each", "{n} coins each", "n"),
    "copies": Nn_("{n} copy", "{n} copies", "n"),
    "stars": Nn_("{n} Star", "{n} Stars", "n"),
    "tries": Nn_("{n} try", "{n} tries", "n"),
    "seconds": Nn_("{n} second", "{n} seconds", "n"),
    # How long until something ends ("expires in 12 days", "holds for 15 minutes").
    "minutes": Nn_("{n} minute", "{n} minutes", "n"),
    "hours": Nn_("{n} hour", "{n} hours", "n"),
    "days": Nn_("{n} day", "{n} days", "n"),
}

MESSAGES: dict[str, Message] = {
    "welcome": N_("Hi{name}! Send me a short video and I will make 1, 5 or 10 slightly different copies "
                  "for Reels, Shorts and TikTok.\nYou have {available:coins}.{bonus}"),
    "bonus": N_("\nA welcome gift of {amount:coins} is yours."),
    "referral": Nn_("\nYou came with a friend's invite: your first order brings you {amount} more coin.",
                    "\nYou came with a friend's invite: your first order brings you {amount} more coins.", "amount"),
    "packages": N_("Buy coins with Telegram Stars:"),
    "package_button": N_("{coins:coins} — {stars} ⭐"),
    "buy_button": N_("Buy coins"),
    "invoice_title": N_("{coins:coins}"),
    "invoice_description": N_("{coins:coins} for making video copies."),
    "coins_credited": N_("Payment received: {coins:coins} added. You have {available:coins} available."),
    "payment_unmatched": N_("We received your payment of {stars:stars} but could not match it to a coin "
                            "package. Support will sort it out; nothing is lost."),
    "offer_withdrawn": N_("This offer has changed. Open /buy to see the current packages."),
    "payments_unavailable": N_("Payments are unavailable right now; nothing was charged. Please try again soon."),
    "refunded": N_("Your purchase of {coins:coins} was refunded: {stars:stars} on the way back to you."),
    "coins_granted": N_("You were given {amount:coins}{reason}."),
    "coins_expired": N_("{amount:coins} expired."),
    "referral_rewarded": Nn_("A friend you invited placed their first order: {amount} coin is yours.",
                             "A friend you invited placed their first order: {amount} coins are yours.", "amount"),
    "referral_invitee_rewarded": Nn_("Your first order with a friend's invite: {amount} coin is yours.",
                                     "Your first order with a friend's invite: {amount} coins are yours.", "amount"),
    "payment_confirming": N_("Payment of {stars:stars} received: your coins follow as soon as Telegram "
                             "confirms it."),
    "payment_reversed": N_("A payment of {stars:stars} was not confirmed by Telegram: the coins it brought "
                           "were taken back ({coins:coins})."),
    "invite": N_("Invite friends with your code ref_{user_id}: when a friend who opens the bot through "
                 "t.me/{bot}?start=ref_{user_id} places a first order, you both get {amount:coins_each}."),
    # the bot's username unknown (an edge that did not say it): the code alone
    "invite_code": N_("Invite friends with your code ref_{user_id}: when a friend who starts the bot with "
                      "/start ref_{user_id} places a first order, you both get {amount:coins_each}."),
    "help": N_("Send a video (up to {max_mb} MB and {max_s:seconds}), choose how many copies, confirm the price. "
               "Each copy arrives as soon as it is ready; cancel at any time and pay only for what you got.\n"
               "/balance — your coins\n/history — your orders\n/buy — buy coins\n/invite — invite friends\n"
               "/language — change the language"),
    "choose_copies": N_("How many copies of this video?"),
    "copies_button": N_("{n} × {price:coins}"),
    "quote": N_("{copies:copies} at {per_copy:coins_each}: {total:coins}.\nThe price holds for {expires}."),
    "confirm_button": N_("Confirm — {total:coins}"),
    "confirmed": N_("Order accepted: {copies:copies}, {total:coins} reserved. You pay only for copies you receive."),
    "cancel_button": N_("Cancel"),
    "progress_rendering": N_("Making copy {n} of {copies}: {bar} {percent}%"),
    "progress_delivered": N_("Delivered: {delivered} of {copies}"),
    "copy_ready": N_("Copy {n} of {copies}"),
    "order_done": Nn_("Your copy is ready: {total:coins}, charged as it arrived.",
                      "All {copies} copies are ready: {total:coins}, each copy charged as it arrives.", "copies"),
    "order_done_partly": Nn_("{made} of {copies} copies is ready: {total:coins}, each copy charged as it "
                             "arrives; nothing for the others.",
                             "{made} of {copies} copies are ready: {total:coins}, each copy charged as it "
                             "arrives; nothing for the others.", "made"),
    "copy_failed": N_("Copy {n} of {copies} could not be made: {why}, even after {tries:tries}. It is not "
                      "sent and not charged; {returned:coins} returned."),
    "why_looks_different": N_("every version looked noticeably different from your video"),
    "why_matches_source": N_("every version stayed too close to your video for platforms to tell apart"),
    "why_matches_other_copy": N_("every version was almost the same as another copy of this order"),
    "order_cancelled": N_("Cancelled. Charged {charged:coins} for copies you received; {released:coins} returned."),
    "order_failed": N_("Sorry, the copies could not be made ({reason}). Charged {charged:coins} for copies "
                       "you received{pending}; {released:coins} returned."),
    "pending": N_(", {amount:coins} more for copies on their way"),
    # Why an order failed: one of the fixed codes (application/use_cases/reason_codes.py), never raw text.
    "failure_source_unreadable": N_("your video could not be read"),
    "failure_too_long": N_("your video is too long"),
    "failure_rendering_failed": N_("making the copies failed"),
    "failure_storage_full": N_("our storage is full"),
    "failure_timed_out": N_("it took too long"),
    "failure_operator_cancelled": N_("an operator stopped it"),
    "failure_unknown": N_("something went wrong on our side"),
    "why_unknown": N_("something went wrong while making it"),
    "grant_gift": N_("a gift from us"),
    "grant_compensation": N_("to make up for a problem on our side"),
    "grant_promotion": N_("a promotion"),
    "cancel_too_late_done": N_("This order is already finished, so there is nothing left to cancel."),
    "cancel_too_late_cancelled": N_("This order was already cancelled."),
    "cancel_too_late_failed": N_("This order has already ended: nothing more will be made or charged."),
    "button_stale": N_("This button no longer works. Send a video, or open /help."),
    "cancel_requested": N_("Stopping… You will be charged only for copies already sent."),
    "not_enough_coins": N_("Not enough coins: this needs {needed}, you have {available}."),
    "quote_expired": N_("This price has expired. Choose the number of copies again."),
    "already_confirmed": N_("This order is already confirmed."),
    "busy": N_("We are at capacity right now. Please try again in a few minutes; nothing was charged."),
    "too_many_orders": Nn_("That is {limit} order in the last hour, the most an hour allows. Please try again "
                           "later; nothing was charged.",
                           "That is {limit} orders in the last hour, the most an hour allows. Please try again "
                           "later; nothing was charged.", "limit"),
    "video_too_big": N_("This video is too large ({size_mb} MB). The limit is {max_mb} MB."),
    "video_too_long": N_("This video is too long ({seconds} s). The limit is {max_s:seconds}."),
    "video_format": N_("This file is not a video I can work with. Send an MP4, MOV or WebM video."),
    "not_video_picture": N_("That is a picture, not a video. Send me a video (MP4, MOV or WebM) and I will offer "
                            "1, 5 or 10 copies of it."),
    "not_video_sound": N_("That is a sound recording, not a video. Send me a video (MP4, MOV or WebM) and I will "
                          "offer 1, 5 or 10 copies of it."),
    "video_unavailable": N_("Telegram could not give me this file. Please send it again."),
    "video_too_sharp": Nn_("This video has more picture a second than I can work with (frame size × frame "
                           "rate). The limit is {max_mpx} megapixel a second, e.g. 1920×1080 at {fps_1080} fps.",
                           "This video has more picture a second than I can work with (frame size × frame "
                           "rate). The limit is {max_mpx} megapixels a second, e.g. 1920×1080 at {fps_1080} fps.",
                           "max_mpx"),
    "video_unchecked": N_("I could not check how long this video is, so I did not take it. Send it again as "
                          "a video (up to {max_s:seconds})."),
    "copy_too_large": N_("Copy {n} of {copies} came out too large for Telegram to send. It is not charged."),
    "unreadable": N_("I could not read that. Send your video again, or /help."),
    "send_video_first": N_("Send me a video first."),
    "send_video_again": N_("The video you sent earlier is no longer kept. Please send it again."),
    "button_invalid": N_("This button is no longer valid."),
    "balance": N_("Available: {available:coins}\nReserved for orders in progress: {reserved}"),
    "balance_lot": N_("• {amount:coins}, {expiry}"),
    "expires": N_("expires in {time}"),
    "no_expiry": N_("no expiry"),
    "history": N_("Your recent orders:"),
    "history_empty": N_("No orders yet."),
    "history_again": N_("Press a copy to get it again:"),
    "again_button": N_("Copy {n} of {copies}, {date}"),
    "copy_again": N_("Copy {n} of {copies}, again"),
    "copy_gone": N_("This copy is no longer kept: copies are deleted a while after they arrive. Send the video "
                    "again to order new ones."),
    "history_line": N_("• {date}: {copies:copies}, {state}, charged {charged}"),
    "state_quoted": N_("not confirmed"),
    "state_confirmed": N_("queued"),
    "state_running": N_("in progress"),
    "state_done": N_("done"),
    "state_cancelling": N_("stopping"),
    "state_cancelled": N_("cancelled"),
    "state_failed": N_("failed"),
    "not_found": N_("I could not find that order."),
    "language": N_("Which language shall I speak?"),
    "language_chosen": N_("From now on I speak English. /language changes it."),
    # The bot's menu of commands (setMyCommands): each at most 256 characters.
    "command_start": N_("Start: your coins and what I do"),
    "command_balance": N_("Your coins and when they expire"),
    "command_history": N_("Your recent orders and their copies"),
    "command_buy": N_("Buy coins with Telegram Stars"),
    "command_invite": N_("Invite friends and both get coins"),
    "command_language": N_("Change the language"),
    "command_help": N_("How it works"),
    "unknown": N_("I did not understand. Send a video, or /help."),
}
