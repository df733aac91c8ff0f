"""A leaked edge token cannot overwrite a user's source: core signs an upload URL only for a
video event that edge stored and that still waits for its file, and only under that event's
own user and update. Edge's own flow (store the event as fetching, upload, complete) works."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

import httpx

from videocopies.adapters.objectstore import S3ObjectStore
from videocopies.embedded.postgres import LocalPostgres
from videocopies.embedded.seaweedfs import LocalSeaweed

from .tokens_core import core_serving

CLIP = b"not really a video, but bytes to store" * 100
SHA = hashlib.sha256(CLIP).hexdigest()


def _video_event(update_id: int, user: int) -> dict[str, Any]:
    video = {"file_id": f"f{update_id}", "size": len(CLIP), "duration_s": 5.0, "width": 720, "height": 1280,
             "fetching": True}
    return {"update_id": update_id, "user": {"id": user}, "kind": "video", "video": video}


async def test_an_upload_url_is_signed_only_for_a_video_edge_stored_and_is_still_fetching(
    pg_server: LocalPostgres, database: str, seaweed: LocalSeaweed
) -> None:
    store = S3ObjectStore(f"t-{uuid.uuid4().hex[:16]}", seaweed.endpoint_url, seaweed.access_key, seaweed.secret_key)
    await store.ensure_bucket()
    async with core_serving(pg_server.url(database), store=store) as api, api.client("edge-1") as edge:

        async def upload_url(user: int, update_id: int) -> httpx.Response:
            body = {"user_id": user, "update_id": update_id, "size": len(CLIP), "sha256": SHA}
            return await edge.post("/v1/sources/upload-url", json=body)

        # Nothing stored: another user's source (or an invented update) is refused.
        assert (await upload_url(5, 900)).status_code == 404
        text = {"update_id": 901, "user": {"id": 5}, "kind": "text", "text": "hi"}
        assert (await edge.post("/v1/inbox", json={"events": [text, _video_event(902, 5)]})).status_code == 200
        assert (await upload_url(5, 901)).status_code == 404  # not a video
        assert (await upload_url(6, 902)).status_code == 404  # the video is user 5's, not 6's

        signed = await upload_url(5, 902)  # edge's own flow: the event it stored as fetching
        assert signed.status_code == 200, signed.text
        assert signed.json()["key"] == "sources/5/902.mp4"
        async with httpx.AsyncClient() as s3:
            put = await s3.put(signed.json()["url"], content=CLIP, headers=signed.json()["headers"])
        assert put.status_code == 200, put.text
        fetched = {"file_id": "f902", "size": len(CLIP), "duration_s": 5.0, "width": 720, "height": 1280,
                   "source_key": "sources/5/902.mp4", "sha256": SHA}
        done = await edge.post("/v1/inbox/videos", json={"videos": [{"update_id": 902, "user_id": 5,
                                                                     "video": fetched}]})
        assert done.json() == {"completed": 1}

        assert (await upload_url(5, 902)).status_code == 404  # stored: it can no longer be overwritten
