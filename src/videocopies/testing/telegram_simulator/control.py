"""HTTP control endpoints under /_sim: create bots and users and act as users from another process."""

from __future__ import annotations

import json

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from videocopies.testing.telegram_simulator.errors import UserActionRefused
from videocopies.testing.telegram_simulator.state import SimulatorState
from videocopies.testing.telegram_simulator.users import SimulatedUser, create_user


def control_routes(state: SimulatorState) -> list[Route]:
    def user(request: Request) -> SimulatedUser:
        return SimulatedUser(state, int(request.path_params["user_id"]))

    async def body(request: Request) -> dict:
        raw = await request.body()
        data = json.loads(raw) if raw else {}
        if not isinstance(data, dict):
            raise ValueError("the body must be a JSON object")
        return data

    def guarded(handler):
        async def endpoint(request: Request) -> Response:
            try:
                return await handler(request)
            except UserActionRefused as e:
                return JSONResponse({"error": str(e)}, status_code=409)
            except KeyError as e:
                return JSONResponse({"error": f"not found: {e}"}, status_code=404)
            except TimeoutError as e:
                return JSONResponse({"error": str(e)}, status_code=408)
            except (ValueError, TypeError) as e:
                return JSONResponse({"error": str(e)}, status_code=400)

        return endpoint

    async def health(request: Request) -> Response:
        return JSONResponse({"ok": True, "mode": state.settings.mode})

    async def new_bot(request: Request) -> Response:
        data = await body(request)
        bot = state.create_bot(data.get("token"), username=data.get("username"),
                               first_name=data.get("first_name", "Sim Bot"))
        return JSONResponse({"token": bot.token, **bot.to_json()}, status_code=201)

    async def new_user(request: Request) -> Response:
        data = await body(request)
        bot = state.bots[data.pop("bot_token")] if data.get("bot_token") else None
        fields = {k: data[k] for k in ("first_name", "language_code", "last_name", "username") if k in data}
        created = create_user(state, bot, user_id=data.get("id"), **fields)
        return JSONResponse({"bot_token": created.bot.token, **created.profile.to_json()}, status_code=201)

    async def send_text(request: Request) -> Response:
        data = await body(request)
        return JSONResponse(user(request).send_text(str(data["text"])), status_code=201)

    async def send_video(request: Request) -> Response:
        q = request.query_params
        message = user(request).send_video(
            await request.body(), width=int(q.get("width", 0)), height=int(q.get("height", 0)),
            duration=int(q.get("duration", 0)), file_name=q.get("file_name", "video.mp4"),
            mime_type=q.get("mime_type", "video/mp4"), caption=q.get("caption"),
        )
        return JSONResponse(message, status_code=201)

    async def send_document(request: Request) -> Response:
        q = request.query_params
        message = user(request).send_document(
            await request.body(), file_name=q.get("file_name", "file"), mime_type=q.get("mime_type"),
        )
        return JSONResponse(message, status_code=201)

    async def press(request: Request) -> Response:
        data = await body(request)
        query_id = user(request).press(int(data["message_id"]), str(data["data"]))
        return JSONResponse({"callback_query_id": query_id}, status_code=201)

    async def press_raw(request: Request) -> Response:
        data = await body(request)
        if not isinstance(data.get("data"), str | None) or not isinstance(data.get("message_id"), int | None):
            raise ValueError("data must be a string or null, message_id an integer or null")
        query_id = user(request).press_raw(data.get("data"), data.get("message_id"))
        return JSONResponse({"callback_query_id": query_id}, status_code=201)

    async def send_video_ref(request: Request) -> Response:
        data = await body(request)
        fields = {k: data[k] for k in ("width", "height", "duration", "file_size", "file_name", "mime_type",
                                       "caption") if k in data}
        message = user(request).send_video_ref(str(data["file_id"]), data.get("file_unique_id"), **fields)
        return JSONResponse(message, status_code=201)

    async def push_raw(request: Request) -> Response:
        """Any update, as given: {"bot_token"?, "kind", "payload"}; {"update_id": null} when the bot
        did not ask for that kind (nothing is queued then)."""
        data = await body(request)
        bot = state.bots[data["bot_token"]] if data.get("bot_token") else state.default_bot()
        update = state.push_raw(bot, data["kind"], data.get("payload"))
        if update is None:
            return JSONResponse({"update_id": None})
        return JSONResponse({"update_id": update.update_id}, status_code=201)

    async def pay(request: Request) -> Response:
        data = await body(request)
        query_id = user(request).pay(int(data["message_id"]),
                                     successful_payment=data.get("successful_payment", "deliver"))
        return JSONResponse({"pre_checkout_query_id": query_id}, status_code=201)

    async def payment(request: Request) -> Response:
        who, query_id = user(request), request.path_params["query_id"]
        wait = float(request.query_params.get("wait", 0))
        status = await who.payment_outcome(query_id, timeout=wait) if wait else who.payment(query_id)
        return JSONResponse(status)

    async def block(request: Request) -> Response:
        data = await body(request)
        user(request).block(bool(data.get("blocked", True)))
        return JSONResponse({"ok": True})

    async def received(request: Request) -> Response:
        after = int(request.query_params.get("after", 0))
        return JSONResponse([e.to_json() for e in user(request).received if e.seq > after])

    async def next_received(request: Request) -> Response:
        q = request.query_params
        criteria = {k: q[k] for k in ("kind", "method", "contains", "regex", "media") if k in q}
        entry = await user(request).next_message(
            timeout=float(q.get("timeout", 5)), after=int(q["after"]) if "after" in q else None, **criteria,
        )
        return JSONResponse(entry.to_json())

    async def chat_message(request: Request) -> Response:
        message = user(request).message(int(request.path_params["message_id"]))
        if message is None:
            raise KeyError(request.path_params["message_id"])
        return JSONResponse(message)

    async def delete_message(request: Request) -> Response:
        user(request).delete(int(request.path_params["message_id"]))
        return JSONResponse({"ok": True})

    async def new_users(request: Request) -> Response:
        """Many users at once, for load runs: {"bot_token", "users": [{"id", "first_name", ...}]}."""
        data = await body(request)
        bot = state.bots[data["bot_token"]] if data.get("bot_token") else None
        made = []
        for spec in data["users"]:
            fields = {k: spec[k] for k in ("first_name", "language_code", "last_name", "username") if k in spec}
            made.append(create_user(state, bot, user_id=spec.get("id"), **fields).profile.to_json())
        return JSONResponse({"users": made}, status_code=201)

    async def burst(request: Request) -> Response:
        """Many users act at once, for load runs: each action is {"user_id", "text"} or
        {"user_id", "message_id", "data"} (a press). Answers when each was accepted."""
        data = await body(request)
        accepted = []
        for action in data["actions"]:
            who = SimulatedUser(state, int(action["user_id"]))
            if "text" in action:
                who.send_text(str(action["text"]))
            else:
                who.press(int(action["message_id"]), str(action["data"]))
            accepted.append({"user_id": who.id, "at": state.clock()})
        return JSONResponse({"accepted": accepted}, status_code=201)

    async def received_many(request: Request) -> Response:
        """What several users received: ?users=1,2,3 (and ?after=seq for each)."""
        ids = [int(u) for u in request.query_params["users"].split(",") if u]
        after = int(request.query_params.get("after", 0))
        return JSONResponse({
            str(u): [e.to_json() for e in SimulatedUser(state, u).received if e.seq > after] for u in ids
        })

    async def stats(request: Request) -> Response:
        """Counters cheap enough to poll during a load run (see `SimulatorState.stats`); `polls`
        counts getUpdates calls, so a bot's poller is running once it is above zero."""
        return JSONResponse(state.stats())

    async def callback_queries(request: Request) -> Response:
        """Every button press with when it was made and answered (null: not yet), for load runs
        that time edge's answers: ?users=1,2,3 for some users only."""
        wanted = {int(u) for u in request.query_params.get("users", "").split(",") if u}
        with state.lock:
            queries = [q.to_json() for bot in state.bots.values() for q in bot.callback_queries.values()
                       if not wanted or q.user_id in wanted]
        return JSONResponse({"callback_queries": queries})

    async def file(request: Request) -> Response:
        file_id = request.path_params["file_id"]
        with state.lock:
            if state.files.get(file_id) is None:
                raise KeyError(file_id)
            data = state.files.read(file_id)
        return Response(data, media_type="application/octet-stream")

    return [
        Route("/health", guarded(health), methods=["GET"]),
        Route("/bots", guarded(new_bot), methods=["POST"]),
        Route("/users", guarded(new_user), methods=["POST"]),
        Route("/users/bulk", guarded(new_users), methods=["POST"]),
        Route("/burst", guarded(burst), methods=["POST"]),
        Route("/received", guarded(received_many), methods=["GET"]),
        Route("/stats", guarded(stats), methods=["GET"]),
        Route("/callback_queries", guarded(callback_queries), methods=["GET"]),
        Route("/updates", guarded(push_raw), methods=["POST"]),
        Route("/users/{user_id:int}/messages", guarded(send_text), methods=["POST"]),
        Route("/users/{user_id:int}/videos", guarded(send_video), methods=["POST"]),
        Route("/users/{user_id:int}/documents", guarded(send_document), methods=["POST"]),
        Route("/users/{user_id:int}/presses", guarded(press), methods=["POST"]),
        Route("/users/{user_id:int}/raw_presses", guarded(press_raw), methods=["POST"]),
        Route("/users/{user_id:int}/video_refs", guarded(send_video_ref), methods=["POST"]),
        Route("/users/{user_id:int}/payments", guarded(pay), methods=["POST"]),
        Route("/users/{user_id:int}/payments/{query_id}", guarded(payment), methods=["GET"]),
        Route("/users/{user_id:int}/block", guarded(block), methods=["POST"]),
        Route("/users/{user_id:int}/received", guarded(received), methods=["GET"]),
        Route("/users/{user_id:int}/received/next", guarded(next_received), methods=["GET"]),
        Route("/users/{user_id:int}/chat/{message_id:int}", guarded(chat_message), methods=["GET"]),
        Route("/users/{user_id:int}/chat/{message_id:int}", guarded(delete_message), methods=["DELETE"]),
        Route("/files/{file_id}", guarded(file), methods=["GET"]),
    ]
