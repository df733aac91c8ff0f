"""The quality gate's rule: which copy may be delivered, and what renders it again."""

import pytest

from videocopies.domain.effects import plan_copies
from videocopies.domain.quality import MAX_RERENDERS, CopyQuality, QualityThresholds, Shortfall, pair_distance, variant

GATE = QualityThresholds(min_ssim=0.85, min_phash_distance=2.0, min_pair_distance=1.0)


def test_a_copy_that_looks_the_same_and_differs_for_a_matcher_passes() -> None:
    assert GATE.shortfalls(CopyQuality(ssim=0.97, phash_distance=5.0, min_pair_distance=3.0)) == ()
    assert GATE.shortfalls(CopyQuality(ssim=0.85, phash_distance=2.0)) == ()  # the floors themselves pass


def test_each_threshold_missed_is_named() -> None:
    assert GATE.shortfalls(CopyQuality(0.70, 5.0)) == (Shortfall.LOOKS_DIFFERENT,)
    assert GATE.shortfalls(CopyQuality(0.999, 0.5)) == (Shortfall.MATCHES_SOURCE,)
    assert GATE.shortfalls(CopyQuality(0.95, 6.0, 0.5)) == (Shortfall.MATCHES_OTHER_COPY,)
    assert GATE.shortfalls(CopyQuality(0.5, 0.0, 0.0)) == tuple(Shortfall)


def test_thresholds_outside_their_scales_are_refused() -> None:
    with pytest.raises(ValueError):
        QualityThresholds(min_ssim=1.5)
    with pytest.raises(ValueError):
        QualityThresholds(min_phash_distance=65)


def test_pair_distance_is_the_mean_hamming_distance_at_the_same_moments() -> None:
    assert pair_distance((0b1111, 0), (0b0000, 0)) == 2.0
    assert pair_distance((1 << 63, 5), (1 << 63, 5)) == 0.0
    with pytest.raises(ValueError):
        pair_distance((1, 2), (1,))


def test_the_next_variant_is_seed_plus_attempt_the_same_everywhere_and_at_most_twice() -> None:
    plan = plan_copies(42, 5)[3]
    assert variant(plan, 0) == plan
    first, second = variant(plan, 1), variant(plan, 2)
    assert (first.attempt, second.attempt) == (1, 2)
    assert first == plan.next_variant() and second == first.next_variant()
    assert (first.seed, first.copy_index) == (plan.seed, plan.copy_index)
    assert len({plan, first, second}) == 3
    with pytest.raises(ValueError):
        variant(plan, MAX_RERENDERS + 1)


def test_figures_survive_a_round_trip() -> None:
    quality = CopyQuality(0.9731, 6.17, None, 1)
    assert CopyQuality.from_dict(quality.to_dict()) == quality
