"""Receipts: a report presented again under the same id gets the answer it got the first
time; a different report under that id is a conflict, never a second run."""

import pytest

from videocopies.domain.receipts import Receipt, ReceiptConflict, fingerprint

REQUEST = {"op": "complete", "job_id": "job-1", "token": "token-a"}
RESULT = {"job_id": "job-1", "state": "done", "copies": 5}


def test_a_fingerprint_does_not_depend_on_key_order():
    reordered = {"token": "token-a", "job_id": "job-1", "op": "complete"}

    assert fingerprint(REQUEST) == fingerprint(reordered)
    assert fingerprint({"a": {"x": 1, "y": [1, 2]}, "b": 2}) == fingerprint({"b": 2, "a": {"y": [1, 2], "x": 1}})


@pytest.mark.parametrize(
    "other",
    [
        {**REQUEST, "token": "token-b"},
        {**REQUEST, "extra": None},
        {k: v for k, v in REQUEST.items() if k != "token"},
        {"a": [1, 2]},
    ],
)
def test_a_fingerprint_tells_different_requests_apart(other):
    assert fingerprint(other) != fingerprint(REQUEST)


def test_list_order_is_content():
    assert fingerprint({"a": [1, 2]}) != fingerprint({"a": [2, 1]})


def test_replaying_the_same_request_gives_the_stored_result():
    receipt = Receipt.record("r-1", REQUEST, RESULT)

    assert receipt.replay(dict(reversed(list(REQUEST.items())))) == RESULT


def test_the_stored_result_does_not_follow_later_changes_to_the_callers_dict():
    result = dict(RESULT)
    receipt = Receipt.record("r-1", REQUEST, result)

    result["state"] = "failed"

    assert receipt.replay(REQUEST) == RESULT


def test_a_different_request_under_the_same_id_is_a_conflict():
    receipt = Receipt.record("r-1", REQUEST, RESULT)
    other = {**REQUEST, "token": "token-b"}

    with pytest.raises(ReceiptConflict) as refused:
        receipt.replay(other)

    assert refused.value.receipt_id == "r-1"
    assert refused.value.stored_fingerprint == fingerprint(REQUEST)
    assert refused.value.presented_fingerprint == fingerprint(other)
