"""The gate's arithmetic on synthetic pictures: SSIM, the perceptual hash, area resampling."""

import numpy as np

from videocopies.adapters.quality.measures import area_matrix, hamming, phash, resample, ssim


def _picture(seed: int = 3, side: int = 128) -> np.ndarray:
    rng = np.random.default_rng(seed)
    coarse = rng.integers(0, 256, (8, 8)).astype(float)
    return np.kron(coarse, np.ones((side // 8, side // 8)))


def test_ssim_is_one_for_the_same_picture_and_falls_with_damage() -> None:
    image = resample(_picture(), 64)
    assert ssim(image, image) == 1.0
    noisy = image + np.random.default_rng(1).normal(0, 10, image.shape)
    assert 0.5 < ssim(image, noisy) < 0.99
    assert ssim(image, resample(_picture(seed=9), 64)) < 0.5


def test_the_hash_keeps_a_slightly_changed_picture_close_and_a_different_one_far() -> None:
    image = _picture()
    original = phash(resample(image, 32))
    brighter = phash(resample(np.clip(image * 1.03 + 4, 0, 255), 32))
    other = phash(resample(_picture(seed=11), 32))
    assert hamming(original, brighter) <= 2
    assert hamming(original, other) >= 16
    assert 0 <= original < 2**64


def test_area_resampling_averages_whole_and_partial_pixels() -> None:
    assert np.allclose(resample(np.arange(16.0).reshape(4, 4), 2), [[2.5, 4.5], [10.5, 12.5]])
    rows = area_matrix(4, 2, 0.5, 3.5)  # a window that starts and ends inside pixels
    assert np.allclose(rows.sum(axis=1), 1.0)
    assert np.allclose(rows[0], [1 / 3, 2 / 3, 0, 0])


def test_a_window_resampled_matches_the_same_window_cut_out() -> None:
    image = _picture()
    window = resample(image, 32, (16.0, 16.0, 112.0, 112.0))
    assert np.allclose(window, resample(image[16:112, 16:112], 32))
