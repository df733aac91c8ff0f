"""The key layout is written into the database with every source and copy: a key already
stored must come out of the same call spelled exactly as before."""

from __future__ import annotations

import re

from videocopies.domain.objects.keys import (
    PREFIXES,
    SOURCE_KEY_PATTERN,
    copy_key,
    is_source_of,
    named_source_key,
    source_key,
)


def test_keys_are_spelled_as_the_stored_ones() -> None:
    assert source_key(7, 123456) == "sources/7/123456.mp4"
    assert named_source_key(1, "clip.mov") == "sources/1/clip.mov"
    assert copy_key("ord-1", 3, "0123456789abcdef0123") == "copies/ord-1/3-0123456789ab.mp4"


def test_the_sweep_lists_both_prefixes_and_nothing_else() -> None:
    assert PREFIXES == ("sources", "copies")
    assert {key.split("/")[0] for key in (source_key(7, 1), copy_key("o", 0, "t"))} == set(PREFIXES)


def test_a_source_belongs_to_the_user_whose_prefix_it_has() -> None:
    assert is_source_of(source_key(7, 1), 7)
    assert not is_source_of(source_key(71, 1), 7)  # not a mere string prefix of the id
    assert not is_source_of(copy_key("7", 0, "t"), 7)


def test_the_pattern_edge_is_held_to_accepts_every_source_and_no_copy() -> None:
    assert SOURCE_KEY_PATTERN == r"^sources/[0-9]+/[A-Za-z0-9._-]+$"  # core's OpenAPI document shows it
    assert re.match(SOURCE_KEY_PATTERN, source_key(7, 123))
    assert re.match(SOURCE_KEY_PATTERN, named_source_key(7, "clip-1.mp4"))
    assert not re.match(SOURCE_KEY_PATTERN, copy_key("o", 0, "t"))
    assert not re.match(SOURCE_KEY_PATTERN, "sources/7/../8/1.mp4".replace("..", "a/b"))
