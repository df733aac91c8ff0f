"""Bot API parameters as Telegram accepts them: query string, urlencoded or multipart form, or JSON.

Form values are strings and nested objects (reply_markup, prices) arrive as JSON text; a JSON body
carries them as real values. `Params` reads both the same way."""

from __future__ import annotations

import json
from email.message import Message
from urllib.parse import parse_qsl

import attrs

from videocopies.testing.telegram_simulator.errors import bad_request


@attrs.frozen
class Upload:
    filename: str | None
    data: bytes


@attrs.define
class Params:
    values: dict = attrs.Factory(dict)
    uploads: dict[str, Upload] = attrs.Factory(dict)

    def has(self, name: str) -> bool:
        return self.values.get(name) not in (None, "")

    def str(self, name: str, default: str | None = None) -> str | None:
        value = self.values.get(name)
        if value is None:
            return default
        return value if isinstance(value, str) else json.dumps(value)

    def int(self, name: str, default: int | None = None) -> int | None:
        value = self.values.get(name)
        if value in (None, ""):
            return default
        if isinstance(value, bool):
            raise bad_request(f"invalid parameter {name}")
        try:
            return int(value)
        except (TypeError, ValueError):
            raise bad_request(f"invalid parameter {name}") from None

    def bool(self, name: str, default: bool = False) -> bool:
        value = self.values.get(name)
        if value in (None, ""):
            return default
        if isinstance(value, bool):
            return value
        return str(value).lower() in ("true", "1")

    def json(self, name: str):
        value = self.values.get(name)
        if not isinstance(value, str):
            return value
        if value == "":
            return None
        try:
            return json.loads(value)
        except ValueError:
            raise bad_request(f"can't parse {name} JSON object") from None

    def file(self, name: str) -> Upload | str | None:
        """A file parameter: an upload (`attach://key` or sent under its own name) or a file_id/URL."""
        if name in self.uploads:
            return self.uploads[name]
        value = self.str(name)
        if value and value.startswith("attach://"):
            upload = self.uploads.get(value.removeprefix("attach://"))
            if upload is None:
                raise bad_request(f"wrong HTTP URL specified; no file attached for {name}")
            return upload
        return value or None


def parse(query: str, content_type: str, body: bytes) -> Params:
    params = Params(dict(parse_qsl(query, keep_blank_values=True)))
    media_type = content_type.split(";", 1)[0].strip().lower()
    if not body:
        return params
    if media_type == "application/json":
        try:
            data = json.loads(body)
        except ValueError:
            raise bad_request("can't parse JSON object") from None
        if not isinstance(data, dict):
            raise bad_request("can't parse JSON object")
        params.values.update(data)
    elif media_type == "application/x-www-form-urlencoded":
        params.values.update(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
    elif media_type == "multipart/form-data":
        _parse_multipart(content_type, body, params)
    return params


def _parse_multipart(content_type: str, body: bytes, params: Params) -> None:
    header = Message()
    header["content-type"] = content_type
    boundary = header.get_param("boundary")
    if not boundary:
        raise bad_request("can't parse multipart body")
    for part in body.split(b"--" + str(boundary).encode())[1:]:
        if part.startswith(b"--"):
            break
        head, _, content = part.removeprefix(b"\r\n").partition(b"\r\n\r\n")
        headers = Message()
        for line in head.decode("utf-8", "replace").split("\r\n"):
            if ":" in line:
                key, _, value = line.partition(":")
                headers[key.strip()] = value.strip()
        name = headers.get_param("name", header="content-disposition")
        if not name:
            continue
        name = str(name)
        content = content.removesuffix(b"\r\n")
        filename = headers.get_filename()
        if filename is not None:
            params.uploads[name] = Upload(filename, content)
        else:
            params.values[name] = content.decode("utf-8", "replace")
