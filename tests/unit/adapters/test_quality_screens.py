"""What the user reads about a copy the quality gate gave up on."""

from videocopies.adapters.screens import render


def test_a_given_up_copy_is_explained_in_the_users_language() -> None:
    payload = {"order_id": "o1", "index": 2, "copies": 5, "reason": "looks_different", "tries": 3, "returned": 4}
    english = render("copy_failed", payload, "en").text
    assert "Copy 3 of 5" in english and "noticeably different" in english and "4 coins returned" in english
    russian = render("copy_failed", {**payload, "reason": "matches_other_copy,matches_source"}, "ru").text
    assert "Копию 3 из 5" in russian and "другой копией" in russian


def test_a_done_order_with_a_given_up_copy_says_how_many_were_made() -> None:
    payload = {"order_id": "o1", "state": "done", "copies": 5, "made": 4, "charged": 8, "pending": 8,
               "released": 0, "reason": None}
    assert render("order_closed", payload, "en").text.startswith("4 of 5 copies are ready: 16 coins")
    assert render("order_closed", {**payload, "made": 5}, "en").text.startswith("All 5 copies are ready")
