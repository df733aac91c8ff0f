"""The effects plan: deterministic, bounded, distinct per copy, and safe to store."""

import hashlib
import json
import os
import subprocess
import sys

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from videocopies.domain.effects import (
    EDGE_CROP,
    LAYOUT,
    LAYOUTS,
    MAX_COPIES,
    MIN_PLAN_DISTANCE,
    RERENDER_CROP,
    RERENDER_SPOTS,
    EffectsPlan,
    InvalidEffectsPlan,
    SeededPlans,
    distance,
    plan_copies,
)
from videocopies.domain.effects.layout import SPOT_DECIMALS
from videocopies.domain.effects.plan import DECIMALS
from videocopies.domain.shared import DomainError

seeds = st.integers(min_value=-(2**63), max_value=2**63)
indexes = st.integers(min_value=0, max_value=MAX_COPIES - 1)
attempts = st.integers(min_value=0, max_value=20)


def assert_within_bounds(plan: EffectsPlan) -> None:
    assert 0.015 <= plan.crop <= 0.05
    assert 0 <= plan.crop_x <= 1 and 0 <= plan.crop_y <= 1
    assert -0.03 <= plan.brightness <= 0.03
    assert 0.97 <= plan.contrast <= 1.04
    assert 0.95 <= plan.saturation <= 1.08
    assert -3 <= plan.hue <= 3
    assert plan.noise in range(2, 7)
    assert 0.97 <= plan.speed <= 1.03
    assert plan.pitch is not None and 0.98 <= plan.pitch <= 1.02
    assert plan.crf in range(20, 25)
    assert plan.strip_metadata is True


def test_the_same_seed_copy_and_attempt_give_the_same_plan():
    assert EffectsPlan.derive(42, 3, 1) == EffectsPlan.derive(42, 3, 1)
    assert plan_copies(42, 10) == plan_copies(42, 10)


def test_another_process_derives_the_same_plan_whatever_its_hash_seed():
    code = (
        "import json; from videocopies.domain.effects import EffectsPlan, plan_copies;"
        "print(json.dumps([EffectsPlan.derive(2024, 4, 2).to_dict(),"
        " [p.to_dict() for p in plan_copies(2024, 10)]]))"
    )
    here = [EffectsPlan.derive(2024, 4, 2).to_dict(), [p.to_dict() for p in plan_copies(2024, 10)]]
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        assert json.loads(out.stdout) == here


def test_plans_are_exactly_what_they_were_when_first_stored():
    """Stored jobs depend on every digit (a job keeps its seed and its plans are drawn again at
    each claim): a faster derivation must give the same plans, in the same key order, as the
    first one did."""
    seeds = [0, 1, 42, 2024, -7, 2**63 - 1, -(2**63), 8742514861359412280]
    doc = [[p.to_dict() for p in plan_copies(s, c)] for s in seeds for c in (1, 5, 10, 50)]
    doc.append(
        [
            EffectsPlan.derive(s, i, a, retry=r).to_dict()
            for s in seeds for i in (0, 3, 49) for a in (0, 2) for r in (0, 1)
        ]
    )
    digest = hashlib.sha256(json.dumps(doc).encode()).hexdigest()
    assert digest == "584230390b16906e6b5fdddd7f5303b5d36c24f73165f1f8b35153fc4b7cd29a"
    # The re-renders' variants are their own digest: they changed on purpose on 2026-12-04 (a
    # re-render's crop window moved to a spot of the frame's edge), and the first plans did not.
    variants = [p.next_variant(plan_copies(s, 5)).to_dict() for s in seeds for p in plan_copies(s, 5)]
    assert hashlib.sha256(json.dumps(variants).encode()).hexdigest() == (
        "bcb17fffc84f161b9d14d3511bc2c9f7682c81ef65a7a26ba5f0f94008bf4882"
    )
    # Layout 2's first plans (2026-12-04): an order's seed fixes them as it fixes layout 1's.
    laid_out = [[p.to_dict() for p in plan_copies(s, c, 2)] for s in seeds for c in (1, 5, 10, 50)]
    assert hashlib.sha256(json.dumps(laid_out).encode()).hexdigest() == (
        "cc3ea74f262cf19dac142abf356b3bfa77a44839840ae91bfe9f0efbf22e4d11"
    )
    assert EffectsPlan.derive(2024, 4, 2).to_dict() == {
        "version": 1, "seed": 2024, "copy_index": 4, "attempt": 2, "retry": 0, "crop": 0.0227,
        "crop_x": 0.2169, "crop_y": 0.5448, "brightness": 0.0023, "contrast": 0.9946, "saturation": 1.0782,
        "hue": 1.9139, "noise": 2, "speed": 1.0166, "audio_tempo": 1.0166, "pitch": 1.013, "crf": 20,
        "strip_metadata": True,
    }


@given(seeds, indexes, attempts, st.integers(min_value=0, max_value=5))
def test_a_derived_plan_is_one_the_validating_constructor_accepts_unchanged(seed, index, attempt, retry):
    plan = EffectsPlan.derive(seed, index, attempt, retry=retry)
    assert EffectsPlan(**attrs.asdict(plan)) == plan
    assert EffectsPlan.from_dict(plan.to_dict()) == plan


def test_different_copies_and_seeds_get_different_plans():
    assert EffectsPlan.derive(7, 0) != EffectsPlan.derive(7, 1)
    assert EffectsPlan.derive(7, 0) != EffectsPlan.derive(8, 0)
    assert EffectsPlan.derive(7, 0) != EffectsPlan.derive(7, 0, 1)


@given(seed=seeds, index=indexes, attempt=attempts, retry=st.integers(0, 50))
def test_every_derived_plan_stays_within_what_a_viewer_does_not_notice(
    seed, index, attempt, retry
):
    plan = EffectsPlan.derive(seed, index, attempt, retry=retry)
    assert_within_bounds(plan)
    assert (plan.seed, plan.copy_index, plan.attempt, plan.retry) == (seed, index, attempt, retry)


@given(seed=seeds, index=indexes, attempt=attempts)
def test_the_sound_keeps_pace_with_the_picture(seed, index, attempt):
    plan = EffectsPlan.derive(seed, index, attempt)
    assert plan.audio_tempo == plan.speed


def test_audio_tempo_defaults_to_speed_and_cannot_differ_from_it():
    plan = EffectsPlan.derive(1, 0)
    assert attrs.evolve(plan, speed=1.01, audio_tempo=1.01).audio_tempo == 1.01
    fields = {k: v for k, v in plan.to_dict().items() if k not in ("version", "audio_tempo")}
    assert EffectsPlan(**fields).audio_tempo == plan.speed
    with pytest.raises(InvalidEffectsPlan, match="audio_tempo"):
        attrs.evolve(plan, audio_tempo=1.02 if plan.speed != 1.02 else 1.01)


@pytest.mark.parametrize("seed", range(200))
def test_the_copies_of_one_order_are_pairwise_far_apart(seed):
    plans = plan_copies(seed, 10)
    assert [p.copy_index for p in plans] == list(range(10))
    for i, a in enumerate(plans):
        assert_within_bounds(a)
        for b in plans[i + 1 :]:
            assert distance(a, b) >= MIN_PLAN_DISTANCE


def test_an_order_of_the_largest_size_is_still_pairwise_far_apart():
    plans = plan_copies(5, MAX_COPIES)
    assert len(plans) == MAX_COPIES
    assert min(distance(a, b) for i, a in enumerate(plans) for b in plans[i + 1 :]) >= (
        MIN_PLAN_DISTANCE
    )


def test_a_copy_too_close_to_an_earlier_one_is_drawn_again():
    redrawn = [p for seed in range(200) for p in plan_copies(seed, 10) if p.retry > 0]
    assert redrawn
    for plan in redrawn:
        assert plan == EffectsPlan.derive(plan.seed, plan.copy_index, retry=plan.retry)


@pytest.mark.parametrize("copies", [0, -1, MAX_COPIES + 1, True, 2.0])
def test_an_order_needs_between_one_and_the_maximum_copies(copies):
    with pytest.raises(InvalidEffectsPlan, match="copies"):
        plan_copies(1, copies)


@pytest.mark.parametrize("copies", [1, 5, 10])
def test_an_order_gets_one_plan_per_copy(copies):
    assert len(plan_copies(9, copies)) == copies


def test_distance_is_zero_for_the_same_plan_symmetric_and_at_most_one():
    a, b = EffectsPlan.derive(3, 0), EffectsPlan.derive(3, 1)
    assert distance(a, a) == 0
    assert distance(a, b) == distance(b, a)
    low = attrs.evolve(
        a, crop=0.015, crop_x=0.0, crop_y=0.0, brightness=-0.03, contrast=0.97,
        saturation=0.95, hue=-3.0, noise=2, speed=0.97, audio_tempo=0.97, pitch=0.98,
    )
    high = attrs.evolve(
        a, crop=0.05, crop_x=1.0, crop_y=1.0, brightness=0.03, contrast=1.04,
        saturation=1.08, hue=3.0, noise=6, speed=1.03, audio_tempo=1.03, pitch=1.02,
    )
    assert distance(low, high) == pytest.approx(1.0)


def test_distance_ignores_what_changes_only_the_file_and_treats_no_pitch_as_unchanged():
    a = EffectsPlan.derive(3, 0)
    assert distance(a, attrs.evolve(a, crf=20 if a.crf != 20 else 24, strip_metadata=False)) == 0
    assert distance(attrs.evolve(a, pitch=None), attrs.evolve(a, pitch=1.0)) == 0
    assert distance(attrs.evolve(a, pitch=None), attrs.evolve(a, pitch=1.02)) == (
        pytest.approx(0.5 / 10)
    )


def test_the_next_variant_is_the_next_attempt_far_from_the_original_and_deterministic():
    plan = EffectsPlan.derive(11, 2)
    variant = plan.next_variant()
    assert (variant.seed, variant.copy_index, variant.attempt) == (11, 2, 1)
    assert distance(plan, variant) >= MIN_PLAN_DISTANCE
    assert variant == plan.next_variant()
    assert variant.next_variant().attempt == 2
    assert variant.next_variant() != variant


@given(seed=seeds, index=indexes, attempt=attempts)
def test_a_re_render_crops_more_at_the_frames_edge_and_the_order_s_copies_spread_over_it(seed, index, attempt):
    plan = EffectsPlan.derive(seed, index, attempt)
    variant = plan.next_variant()
    assert variant.crop >= RERENDER_CROP
    assert (variant.crop_x, variant.crop_y) in RERENDER_SPOTS
    assert 0 in (variant.crop_x % 1, variant.crop_y % 1)  # on an edge: never the centred crop
    assert_within_bounds(variant)


def test_eight_copies_first_re_renders_take_eight_different_spots():
    plans = plan_copies(5, 8)
    spots = {(p.next_variant().crop_x, p.next_variant().crop_y) for p in plans}
    assert spots == set(RERENDER_SPOTS)
    (plan,) = plan_copies(5, 1)
    assert (plan.next_variant().crop_x, plan.next_variant().crop_y) != (
        plan.next_variant().next_variant().crop_x, plan.next_variant().next_variant().crop_y
    )  # a second re-render moves again


@pytest.mark.parametrize("seed", range(50))
def test_the_next_variant_also_keeps_away_from_the_other_copies(seed):
    plans = plan_copies(seed, 10)
    variant = plans[3].next_variant(avoid=plans)
    assert all(distance(variant, other) >= MIN_PLAN_DISTANCE for other in plans)
    assert_within_bounds(variant)


@given(seed=seeds, index=indexes, attempt=attempts)
def test_a_plan_survives_a_round_trip_through_json(seed, index, attempt):
    plan = EffectsPlan.derive(seed, index, attempt)
    stored = json.loads(json.dumps(plan.to_dict()))
    assert stored["version"] == 1
    assert EffectsPlan.from_dict(stored) == plan


def test_a_plan_without_pitch_or_with_whole_numbers_for_amounts_round_trips():
    plan = attrs.evolve(EffectsPlan.derive(1, 0), pitch=None, crop_x=1, strip_metadata=False)
    assert plan.crop_x == 1.0 and isinstance(plan.crop_x, float)
    assert EffectsPlan.from_dict(json.loads(json.dumps(plan.to_dict()))) == plan


def test_amounts_are_kept_to_four_decimals():
    plan = attrs.evolve(EffectsPlan.derive(1, 0), brightness=0.0123456)
    assert plan.brightness == 0.0123


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("crop", 0.01), ("crop", 0.06), ("crop_x", -0.1), ("crop_y", 1.5),
        ("brightness", 0.05), ("contrast", 0.9), ("saturation", 1.2), ("hue", -4.0),
        ("noise", 1), ("noise", 7), ("speed", 1.1), ("pitch", 0.9), ("crf", 19), ("crf", 25),
        ("copy_index", -1), ("copy_index", MAX_COPIES), ("attempt", -1), ("retry", -1),
        ("crop", float("nan")), ("hue", float("inf")),
    ],
)
def test_a_stored_plan_out_of_bounds_is_refused(key, value):
    data = EffectsPlan.derive(1, 0).to_dict() | {key: value}
    if key == "speed":
        data["audio_tempo"] = value
    with pytest.raises(InvalidEffectsPlan, match=key):
        EffectsPlan.from_dict(data)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("crop", "0.02"), ("noise", 3.0), ("noise", True), ("crf", "22"), ("seed", None),
        ("copy_index", 1.0), ("strip_metadata", "yes"), ("strip_metadata", 1),
        ("brightness", None), ("hue", [1]), ("speed", False),
    ],
)
def test_a_stored_plan_with_a_wrong_type_is_refused(key, value):
    data = EffectsPlan.derive(1, 0).to_dict() | {key: value}
    with pytest.raises(InvalidEffectsPlan, match=key):
        EffectsPlan.from_dict(data)


@pytest.mark.parametrize("key", [k for k in EffectsPlan.derive(1, 0).to_dict() if k != "version"])
def test_a_stored_plan_missing_a_key_is_refused(key):
    data = EffectsPlan.derive(1, 0).to_dict()
    del data[key]
    with pytest.raises(InvalidEffectsPlan, match=f"missing {key}"):
        EffectsPlan.from_dict(data)


@pytest.mark.parametrize("version", [None, 0, 2, "1", True, 1.0])
def test_a_stored_plan_of_another_version_is_refused(version):
    data = EffectsPlan.derive(1, 0).to_dict() | {"version": version}
    if version is None:
        del data["version"]
    with pytest.raises(InvalidEffectsPlan, match="version"):
        EffectsPlan.from_dict(data)


def test_a_stored_plan_with_unknown_keys_or_not_a_mapping_is_refused():
    with pytest.raises(InvalidEffectsPlan, match="unknown mirror"):
        EffectsPlan.from_dict(EffectsPlan.derive(1, 0).to_dict() | {"mirror": True})
    with pytest.raises(InvalidEffectsPlan, match="mapping"):
        EffectsPlan.from_dict([("version", 1)])  # type: ignore[arg-type]


def test_a_refusal_is_a_domain_error_that_names_its_reason():
    with pytest.raises(DomainError) as refused:
        EffectsPlan.from_dict({"version": 1})
    assert isinstance(refused.value, InvalidEffectsPlan)
    assert refused.value.reason.startswith("missing seed")


def test_no_out_of_bounds_plan_can_be_built_directly():
    with pytest.raises(InvalidEffectsPlan, match="saturation"):
        attrs.evolve(EffectsPlan.derive(1, 0), saturation=0.5)


def test_a_plan_is_frozen():
    plan = EffectsPlan.derive(1, 0)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        plan.crop = 0.03  # type: ignore[misc]


@given(seeds, st.integers(min_value=1, max_value=MAX_COPIES))
def test_seeded_plans_are_the_plans_the_seed_fixes(seed, copies):
    for layout in LAYOUTS:
        seeded = SeededPlans(seed, copies, layout)
        assert len(seeded) == copies
        assert tuple(seeded) == plan_copies(seed, copies, layout)
        assert seeded == plan_copies(seed, copies, layout) and plan_copies(seed, copies, layout) == seeded
        assert seeded[-1] == plan_copies(seed, copies, layout)[-1]
        assert seeded == SeededPlans(seed, copies, layout)
    assert SeededPlans(seed, copies) == SeededPlans(seed, copies, LAYOUT) != SeededPlans(seed, copies, 1)


def test_seeded_plans_are_drawn_only_when_a_plan_is_read(monkeypatch):
    drawn = []
    real = plan_copies

    def counting(seed, copies, layout):
        drawn.append((seed, copies))
        return real(seed, copies, layout)

    monkeypatch.setattr("videocopies.domain.effects.seeded.plan_copies", counting)
    seeded = SeededPlans(7, 5)
    assert len(seeded) == 5 and drawn == []  # counting the copies draws nothing
    assert [p.copy_index for p in seeded] == [0, 1, 2, 3, 4]
    assert seeded[2].copy_index == 2
    assert drawn == [(7, 5)]  # drawn once, then kept


@pytest.mark.parametrize(("seed", "copies"), [(7, 0), (7, MAX_COPIES + 1), (7, True), ("7", 5), (True, 5), (7.0, 5)])
def test_seeded_plans_refuse_what_no_order_has(seed, copies):
    with pytest.raises(InvalidEffectsPlan):
        SeededPlans(seed, copies)


@pytest.mark.parametrize("layout", [0, 3, True, "2", 2.0])
def test_seeded_plans_refuse_a_layout_there_is_not(layout):
    with pytest.raises(InvalidEffectsPlan, match="laid out"):
        SeededPlans(7, 5, layout)
    with pytest.raises(InvalidEffectsPlan, match="laid out"):
        plan_copies(7, 5, layout)


@given(seeds, st.integers(min_value=1, max_value=MAX_COPIES))
def test_layout_2_crops_every_first_plan_at_the_edge_and_keeps_the_rest_of_its_draw(seed, copies):
    """Each first plan crops at least EDGE_CROP with its window on the frame's edge; apart from
    the crop, it is the plan layout 1 would draw for the same seed, copy and retry."""
    for plan in plan_copies(seed, copies, 2):
        assert EffectsPlan(**attrs.asdict(plan)) == plan  # inside every bound, though not validated again
        assert plan.crop >= EDGE_CROP and plan.attempt == 0
        assert {plan.crop_x, plan.crop_y} & {0.0, 1.0}
        drawn = EffectsPlan.derive(seed, plan.copy_index, retry=plan.retry)
        assert attrs.evolve(plan, crop=drawn.crop, crop_x=drawn.crop_x, crop_y=drawn.crop_y) == drawn
        assert plan.crop == max(drawn.crop, EDGE_CROP)


@given(seeds)
def test_layout_2_spreads_an_orders_first_windows_round_the_edge(seed):
    """Ten copies take ten places round the frame's edge, no two within a twentieth of the way
    round (the golden-ratio step), so no two first renders of an order crop the same spot."""
    def way_round(plan: EffectsPlan) -> float:
        x, y = plan.crop_x, plan.crop_y
        if y == 0.0 and x < 1.0:
            return x / 4
        if x == 1.0 and y < 1.0:
            return (1 + y) / 4
        if y == 1.0 and x > 0.0:
            return (3 - x) / 4
        return (4 - y) / 4

    places = sorted(way_round(p) for p in plan_copies(seed, 10, 2))
    gaps = [b - a for a, b in zip(places, places[1:], strict=False)] + [1 + places[0] - places[-1]]
    assert min(gaps) > 0.05


def test_layout_spots_are_rounded_as_a_plans_amounts():
    assert SPOT_DECIMALS == DECIMALS
