"""Where an order's first plans crop: the layouts a job keeps with its seed."""

from __future__ import annotations

import hashlib

# How an order's first plans are laid out. Layout 1 draws each crop window anywhere, which on a
# smooth picture left most of them near the centre, where the hash barely moves: on the talking
# head half of the first renders were rendered again. Layout 2 crops each first plan at least
# EDGE_CROP and walks its window round the frame's edge, copy i at the golden-ratio step i from a
# point the seed picks, so an order's copies sit apart from each other as well as off-centre.
# A job keeps its layout with its seed: one confirmed before layout 2 draws its plans as it did.
LAYOUTS = (1, 2)
LAYOUT = 2
EDGE_CROP = 0.04
SPOT_DECIMALS = 4  # a plan's own (plan.DECIMALS; a unit test holds the two equal)
_GOLDEN_STEP = (5**0.5 - 1) / 2


def edge_spots(seed: int, copies: int) -> list[tuple[float, float]]:
    """Layout 2's crop window (crop_x, crop_y) for each copy of an order."""
    start = _edge_start(seed)
    return [_edge_point(start + index * _GOLDEN_STEP) for index in range(copies)]


def _edge_start(seed: int) -> float:
    """Where on the frame's edge an order's first copy crops, as a share of the way round."""
    digest = hashlib.sha256(f"effects.layout2:{seed}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _edge_point(way_round: float) -> tuple[float, float]:
    """The crop window at a share of the way round the frame's edge, clockwise from the
    top-left corner."""
    sides = 4 * (way_round % 1.0)
    side, along = int(sides), round(sides - int(sides), SPOT_DECIMALS)
    back = round(1.0 - along, SPOT_DECIMALS)
    return ((along, 0.0), (1.0, along), (back, 1.0), (0.0, back))[side]
