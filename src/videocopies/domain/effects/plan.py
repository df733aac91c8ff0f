"""The effects plan: the seeded, bounded changes that make one copy of a video unique."""

from __future__ import annotations

import hashlib
import itertools
import operator
import random
from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

import attrs

from videocopies.domain.effects.layout import EDGE_CROP, LAYOUTS, edge_spots
from videocopies.domain.shared import DomainError

PLAN_VERSION = 1
DECIMALS = 4
MAX_COPIES = 50
MIN_PLAN_DISTANCE = 0.15

# Bounds that keep every copy looking and sounding like its source (research/video.md).
CROP = (0.015, 0.05)
CROP_POSITION = (0.0, 1.0)
BRIGHTNESS = (-0.03, 0.03)
CONTRAST = (0.97, 1.04)
SATURATION = (0.95, 1.08)
HUE_DEGREES = (-3.0, 3.0)
NOISE = (2, 6)
SPEED = (0.97, 1.03)
PITCH = (0.98, 1.02)
CRF = (20, 24)
# A re-render's crop is at least RERENDER_CROP, its window at one of RERENDER_SPOTS (crop_x,
# crop_y: the corners, then the edges' middles). On a smooth picture (a talking head before a
# plain wall) a small, centred crop leaves the perceptual hash within the gate's 2 bits of its
# source's, the commonest reason to render a copy again; the same crop at a corner moves it by 8
# to 18 bits at the same SSIM. Copy i's r-th re-render takes spot (3i + r) % 8, so an order's
# re-rendered copies spread over the frame instead of meeting at one corner, where a matcher
# would pair them (docs/quality.md).
RERENDER_CROP = 0.035
RERENDER_SPOTS = ((0.0, 0.0), (1.0, 1.0), (1.0, 0.0), (0.0, 1.0), (0.5, 0.0), (0.5, 1.0), (0.0, 0.5), (1.0, 0.5))


@attrs.define
class InvalidEffectsPlan(DomainError):
    """A plan that is malformed or would change the copy more than a viewer must not notice."""

    reason: str


def _rounded(value: Any) -> Any:
    # Fixed decimals make a plan survive to_dict/from_dict exactly; non-numbers reach the validator.
    if isinstance(value, int | float) and not isinstance(value, bool):
        return round(float(value), DECIMALS)
    return value


def _within(lo: float, hi: float) -> Any:
    def check(_plan: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if not isinstance(value, float):
            raise InvalidEffectsPlan(f"{attribute.name} must be a number, got {value!r}")
        if not lo <= value <= hi:
            raise InvalidEffectsPlan(f"{attribute.name}={value} is outside {lo}..{hi}")

    return check


def _whole(lo: int | None = None, hi: int | None = None) -> Any:
    def check(_plan: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidEffectsPlan(f"{attribute.name} must be a whole number, got {value!r}")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise InvalidEffectsPlan(f"{attribute.name}={value} is outside {lo}..{hi}")

    return check


def _flag(_plan: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, bool):
        raise InvalidEffectsPlan(f"{attribute.name} must be true or false, got {value!r}")


def _follows_speed(plan: EffectsPlan, _attribute: attrs.Attribute[Any], value: Any) -> None:
    if value != plan.speed:
        raise InvalidEffectsPlan(f"audio_tempo={value!r} must equal speed={plan.speed!r}")


def _amount(bounds: tuple[float, float]) -> Any:
    return attrs.field(converter=_rounded, validator=_within(*bounds))


@attrs.frozen(kw_only=True)
class EffectsPlan:
    """How one copy differs from the source, by amounts a viewer does not notice.

    Crop removes a share of each axis (the window placed at crop_x, crop_y of the slack) and
    the picture is scaled back to the source size; colour, grain and speed move a little; the
    sound keeps pace with the picture (audio_tempo always equals speed); pitch may shift
    slightly; the encoder quality jitters; metadata is stripped.
    """

    seed: int = attrs.field(validator=_whole())
    copy_index: int = attrs.field(validator=_whole(0, MAX_COPIES - 1))
    attempt: int = attrs.field(default=0, validator=_whole(0))
    retry: int = attrs.field(default=0, validator=_whole(0))
    crop: float = _amount(CROP)
    crop_x: float = _amount(CROP_POSITION)
    crop_y: float = _amount(CROP_POSITION)
    brightness: float = _amount(BRIGHTNESS)
    contrast: float = _amount(CONTRAST)
    saturation: float = _amount(SATURATION)
    hue: float = _amount(HUE_DEGREES)
    noise: int = attrs.field(validator=_whole(*NOISE))
    speed: float = _amount(SPEED)
    audio_tempo: float = attrs.field(
        default=attrs.Factory(lambda plan: plan.speed, takes_self=True),
        converter=_rounded,
        validator=_follows_speed,
    )
    pitch: float | None = attrs.field(
        default=None, converter=_rounded, validator=attrs.validators.optional(_within(*PITCH))
    )
    crf: int = attrs.field(validator=_whole(*CRF))
    strip_metadata: bool = attrs.field(default=True, validator=_flag)

    @classmethod
    def derive(cls, seed: int, copy_index: int, attempt: int = 0, *, retry: int = 0) -> EffectsPlan:
        """The same seed, copy, attempt and retry always give the same plan, in any process."""
        for value, (check, field) in zip((seed, copy_index, attempt, retry), _GIVEN, strict=True):
            check(None, field, value)
        # The seed is a string through SHA-512 (what random.seed does with a str, done here
        # directly), so the draws do not depend on hash randomisation.
        key = f"effects.v{PLAN_VERSION}:{seed}:{copy_index}:{attempt}:{retry}".encode()
        draw = random.Random(int.from_bytes(key + hashlib.sha512(key).digest(), "big")).random
        # The order of the draws is part of the plan: speed, then the picture, noise, pitch, crf.
        speed, crop, crop_x, crop_y, brightness, contrast, saturation, hue = [
            round(lo + span * draw(), DECIMALS) for lo, span in _PICTURE_DRAWS
        ]
        noise = NOISE[0] + int(draw() * (NOISE[1] - NOISE[0] + 1))
        pitch = round(PITCH[0] + _PITCH_SPAN * draw(), DECIMALS)
        crf = CRF[0] + int(draw() * (CRF[1] - CRF[0] + 1))
        # Every draw lies inside its bounds by construction (a unit test holds the validating
        # constructor to that), so the plan is assembled without running the validators again.
        return cls._assemble(
            seed=seed, copy_index=copy_index, attempt=attempt, retry=retry,
            crop=crop, crop_x=crop_x, crop_y=crop_y, brightness=brightness, contrast=contrast,
            saturation=saturation, hue=hue, noise=noise, speed=speed, audio_tempo=speed, pitch=pitch,
            crf=crf, strip_metadata=True,
        )

    @classmethod
    def _assemble(cls, **values: Any) -> EffectsPlan:
        plan = object.__new__(cls)
        for name, value in values.items():
            _set(plan, name, value)
        return plan

    def next_variant(self, avoid: Iterable[EffectsPlan] = ()) -> EffectsPlan:
        """The plan to re-render this copy with after it fails a quality gate.

        It is attempt + 1 of the same copy, and at least MIN_PLAN_DISTANCE from this plan and
        from every plan to avoid (such as the other copies of the order). Its crop is at least
        RERENDER_CROP and its window at one of RERENDER_SPOTS, so that a copy a matcher would
        have recognised moves away from its source and from the order's other copies.
        """
        return _far_from((self, *avoid), self.seed, self.copy_index, self.attempt + 1)

    def to_dict(self) -> dict[str, Any]:
        """The plan as plain JSON-ready values, tagged with the plan format version."""
        data: dict[str, Any] = {"version": PLAN_VERSION}
        for name in _NAMED:
            data[name] = getattr(self, name)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EffectsPlan:
        """Read a stored plan back, refusing anything a plan's own rules would refuse."""
        if not isinstance(data, Mapping):
            raise InvalidEffectsPlan(f"a plan must be a mapping, got {type(data).__name__}")
        version = data.get("version")
        if type(version) is not int or version != PLAN_VERSION:
            raise InvalidEffectsPlan(f"unsupported plan version {version!r}")
        names = [field.name for field in attrs.fields(cls)]
        if missing := [name for name in names if name not in data]:
            raise InvalidEffectsPlan(f"missing {', '.join(missing)}")
        if unknown := sorted(set(data) - set(names) - {"version"}, key=str):
            raise InvalidEffectsPlan(f"unknown {', '.join(map(str, unknown))}")
        return cls(**{name: data[name] for name in names})


_set = object.__setattr__
_PICTURE_DRAWS = tuple(
    (lo, hi - lo)
    for lo, hi in (SPEED, CROP, CROP_POSITION, CROP_POSITION, BRIGHTNESS, CONTRAST, SATURATION, HUE_DEGREES)
)
_PITCH_SPAN = PITCH[1] - PITCH[0]
_NAMED = {field.name: field for field in attrs.fields(EffectsPlan)}
# What derive is given (its draws need no checking): seed, copy_index, attempt, retry.
_Check = Callable[[Any, "attrs.Attribute[Any]", Any], None]
_GIVEN = tuple(
    (cast(_Check, _NAMED[name].validator), _NAMED[name]) for name in ("seed", "copy_index", "attempt", "retry")
)

# Audio tempo follows speed, and CRF and metadata change only the file, so they are not measured.
_MEASURED = (
    ("crop", CROP), ("crop_x", CROP_POSITION), ("crop_y", CROP_POSITION),
    ("brightness", BRIGHTNESS), ("contrast", CONTRAST), ("saturation", SATURATION),
    ("hue", HUE_DEGREES), ("noise", NOISE), ("speed", SPEED), ("pitch", PITCH),
)
_SPANS = tuple((name, lo, hi - lo) for name, (lo, hi) in _MEASURED)


def distance(a: EffectsPlan, b: EffectsPlan) -> float:
    """How differently two plans change a video, from 0 (same look) to 1 (opposite extremes).

    The mean, over crop, crop_x, crop_y, brightness, contrast, saturation, hue, noise, speed and
    pitch, of the absolute difference as a share of that parameter's allowed range; a plan
    without pitch counts as pitch 1.0 (unchanged).
    """
    return _apart(_position(a), _position(b))


def _position(plan: EffectsPlan) -> tuple[float, ...]:
    """Each measured parameter as a share of its allowed range."""
    values = []
    for name, lo, span in _SPANS:
        found = getattr(plan, name)
        values.append(((1.0 if found is None else found) - lo) / span)
    return tuple(values)


def _apart(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    spread: float = sum(map(abs, map(operator.sub, a, b)))
    return spread / len(_MEASURED)


def plan_copies(seed: int, copies: int, layout: int = 1) -> tuple[EffectsPlan, ...]:
    """One plan per copy of an order, no two closer than MIN_PLAN_DISTANCE, laid out as `layout`
    says (LAYOUTS; new orders take LAYOUT).

    An order has 1 to MAX_COPIES copies; a copy whose first draw is too close to an earlier one
    is drawn again with the next retry salt, so the result is still the same for the same seed.
    """
    if isinstance(copies, bool) or not isinstance(copies, int) or not 1 <= copies <= MAX_COPIES:
        raise InvalidEffectsPlan(f"an order has 1..{MAX_COPIES} copies, not {copies!r}")
    check_layout(layout)
    plans: list[EffectsPlan] = []
    positions: list[tuple[float, ...]] = []
    spots: list[tuple[float, float] | None] = [*edge_spots(seed, copies)] if layout == 2 else [None] * copies
    for index, spot in enumerate(spots):
        plan, here = _far_from_positions(positions, seed, index, 0, spot)
        plans.append(plan)
        positions.append(here)
    return tuple(plans)


def check_layout(layout: int) -> None:
    if type(layout) is not int or layout not in LAYOUTS:
        raise InvalidEffectsPlan(f"an order's plans are laid out as one of {LAYOUTS}, not {layout!r}")


def _moved(plan: EffectsPlan, spot: tuple[float, float], least_crop: float = RERENDER_CROP) -> EffectsPlan:
    """The plan with its crop at least `least_crop` and its window at `spot`. Both stay inside
    their bounds by construction (a unit test holds the validating constructor to that), so, as
    in `derive`, the validators are not run again: a claim draws every plan of its job."""
    values = {name: getattr(plan, name) for name in _NAMED}
    values.update(crop=max(plan.crop, least_crop), crop_x=spot[0], crop_y=spot[1])
    return EffectsPlan._assemble(**values)


def _far_from(others: Iterable[EffectsPlan], seed: int, index: int, attempt: int) -> EffectsPlan:
    return _far_from_positions([_position(o) for o in others], seed, index, attempt)[0]


def _far_from_positions(
    positions: list[tuple[float, ...]], seed: int, index: int, attempt: int, edge: tuple[float, float] | None = None
) -> tuple[EffectsPlan, tuple[float, ...]]:
    """`edge`: a first plan's spot on the frame's edge (layout 2)."""
    # Two draws are this close with probability under 1 %, so even beside 49 others a draw is
    # far enough more often than not and the search ends after a few retries.
    for retry in itertools.count():
        plan = EffectsPlan.derive(seed, index, attempt, retry=retry)
        if attempt:
            plan = _moved(plan, RERENDER_SPOTS[(3 * index + attempt) % len(RERENDER_SPOTS)])
        elif edge is not None:
            plan = _moved(plan, edge, EDGE_CROP)
        here = _position(plan)
        if all(_apart(here, there) >= MIN_PLAN_DISTANCE for there in positions):
            return plan, here
    raise AssertionError("unreachable")  # pragma: no cover
