"""What core's answers mean to a node: a result, a refusal (`CoreRefused`, `LeaseLost`,
`NotFound`), the relocation a deploy sends."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import attrs

from videocopies.adapters.http.wire import Answer
from videocopies.application.errors import NotFound
from videocopies.domain.jobs import LeaseLossReason, LeaseLost
from videocopies.domain.shared import JobId

if TYPE_CHECKING:
    import httpx


@attrs.define
class CoreRefused(Exception):
    """Core answered with a refusal that retrying cannot change (a bad token, a bad request)."""

    status: int
    body: dict[str, Any]

    def __str__(self) -> str:
        return f"core refused ({self.status}): {self.body.get('detail') or self.body}"


class StorageBusy(Exception):
    """Storage answered 5xx: it is there but cannot serve now."""


def storage_answer(response: httpx.Response, *ok: int) -> None:
    if response.status_code in ok:
        return
    if response.status_code >= 500:
        raise StorageBusy(f"HTTP {response.status_code}")
    raise CoreRefused(response.status_code, {"detail": f"storage refused: HTTP {response.status_code}"})


def relocated_to(answer: Answer) -> str | None:
    """The new core a deploy points this node to (see Relocation in the API)."""
    url = answer.headers.get("x-videocopies-moved", "")
    return url if url.startswith(("http://", "https://")) else None


def result_of(answer: Answer, path: str) -> Any:
    try:
        body = json.loads(answer.body)
    except ValueError:
        body = {"detail": answer.body[:200].decode(errors="replace")}
    if answer.status < 300:
        return body
    raise refusal_of(answer.status, body, path)


def refusal_of(status: int, body: Any, path: str) -> Exception:
    """What a refused call at `path` raises: its own answer, or the refusal a claim reports of
    the completion it carried."""
    reason = body.get("reason") if isinstance(body, dict) else None
    error = body.get("error") if isinstance(body, dict) else None
    if error in ("lease_lost", "not_your_job"):
        job_id = path.split("/")[3]
        return LeaseLost(JobId(job_id), LeaseLossReason(reason or "not_leased"))
    if status == 404:
        return NotFound("job", path)
    return CoreRefused(status, body if isinstance(body, dict) else {"detail": str(body)})
