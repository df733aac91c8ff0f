"""What edge makes of a message that is not a plain video (issue 20, build 4): a round video note
is a video to copy; a photo, a sticker, a voice or an audio is a video refused for what it is,
which core answers with what to send instead."""

from __future__ import annotations

from typing import Any

from videocopies.adapters.telegram.updates import event_of

USER = {"id": 7, "language_code": "ru", "first_name": "Анна"}


def _event(**message: Any) -> dict[str, Any]:
    event = event_of({"update_id": 1, "message": {"message_id": 3, "from": USER, **message}}, 20 * 1024 * 1024)
    assert event is not None
    return event


def test_a_round_video_note_is_a_video_to_fetch() -> None:
    note = {"file_id": "n1", "file_unique_id": "u1", "length": 384, "duration": 12, "file_size": 900_000}
    event = _event(video_note=note)
    assert event["kind"] == "video"
    video = event["video"]
    assert (video["file_id"], video["width"], video["height"], video["duration_s"]) == ("n1", 384, 384, 12.0)
    assert video["fetching"] and video["refusal"] is None and video["mime_type"] == "video/mp4"


def test_a_photo_a_sticker_a_voice_or_an_audio_is_refused_for_what_it_is() -> None:
    sizes = [{"file_id": "small", "width": 90, "height": 90}, {"file_id": "big", "width": 1280, "height": 1280}]
    sent = {
        "photo": (sizes, "image/jpeg", "big"),
        "sticker": ({"file_id": "s1", "width": 512, "height": 512}, "image/webp", "s1"),
        "voice": ({"file_id": "v1", "duration": 3, "mime_type": "audio/ogg"}, "audio/ogg", "v1"),
        "audio": ({"file_id": "a1", "duration": 200}, "audio/mpeg", "a1"),
    }
    for field, (media, mime, file_id) in sent.items():
        event = _event(**{field: media})
        video = event["video"]
        assert event["kind"] == "video", field
        assert (video["file_id"], video["mime_type"], video["refusal"], video["fetching"]) == (
            file_id, mime, "not_a_video", False), field


def test_text_and_a_message_of_nothing_known_stay_text() -> None:
    assert _event(text="/help")["text"] == "/help"
    assert _event(location={"latitude": 1.0, "longitude": 2.0}) == {
        "update_id": 1, "user": {"id": 7, "language_code": "ru", "first_name": "Анна"}, "kind": "text", "text": ""}
