"""The arithmetic of the quality gate on small grayscale frames: area resampling, SSIM and a
64-bit DCT perceptual hash. Pure numpy, so it is tested without any video."""

from __future__ import annotations

from functools import cache, lru_cache

import numpy as np

SSIM_SIDE = 64
HASH_SIDE = 32
HASH_BITS = 8  # the 8 x 8 lowest frequencies: 64 bits
_WINDOW = 7
_C1 = (0.01 * 255) ** 2
_C2 = (0.03 * 255) ** 2


# A copy's crop window is its own, so an unbounded cache grew by 128 KiB a job for as long as
# a worker ran; the 12 pictures of a copy share its two matrices (and the last copy's are kept).
@lru_cache(maxsize=4)
def area_matrix(size_in: int, size_out: int, start: float = 0.0, stop: float | None = None) -> np.ndarray:
    """Rows that average the input pixels covering each output pixel of the window
    [start, stop) of a line of `size_in` pixels, fractions of a pixel included."""
    stop = float(size_in) if stop is None else stop
    edges = start + (stop - start) * np.arange(size_out + 1) / size_out
    left, right = edges[:-1, None], edges[1:, None]
    pixels = np.arange(size_in)[None, :]
    overlap = np.clip(np.minimum(right, pixels + 1) - np.maximum(left, pixels), 0.0, None)
    return overlap / overlap.sum(axis=1, keepdims=True)


def resample(image: np.ndarray, side: int, window: tuple[float, float, float, float] | None = None) -> np.ndarray:
    """`image` (or its window x0, y0, x1, y1 in pixels) averaged down to side x side."""
    height, width = image.shape
    image = image.astype(np.float64)  # frames are kept as bytes
    if window is None and height % side == 0 and width % side == 0:
        return image.reshape(side, height // side, side, width // side).mean(axis=(1, 3))
    x0, y0, x1, y1 = window or (0.0, 0.0, float(width), float(height))
    rows = area_matrix(height, side, float(y0), float(y1))
    cols = area_matrix(width, side, float(x0), float(x1))
    # einsum, not @: on matrices this small a threaded BLAS spends more CPU waking its threads
    # than multiplying (measured 6 ms against 0.7 ms per picture).
    tall = np.einsum("ij,jk->ik", rows, image)
    return np.einsum("ik,lk->il", tall, cols)


def _box_mean(image: np.ndarray) -> np.ndarray:
    """Mean over every 7 x 7 window that fits inside the image (no padding)."""
    total = np.cumsum(np.cumsum(np.pad(image, ((1, 0), (1, 0))), axis=0), axis=1)
    n = _WINDOW
    return (total[n:, n:] - total[:-n, n:] - total[n:, :-n] + total[:-n, :-n]) / (n * n)


def ssim(a: np.ndarray, b: np.ndarray) -> float:
    """Mean structural similarity of two same-sized grayscale images on a 0-255 scale, with a
    7 x 7 uniform window (as scikit-image computes it by default)."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    mean_a, mean_b = _box_mean(a), _box_mean(b)
    # Sample (not population) variances, as scikit-image does.
    scale = _WINDOW * _WINDOW / (_WINDOW * _WINDOW - 1)
    var_a = (_box_mean(a * a) - mean_a**2) * scale
    var_b = (_box_mean(b * b) - mean_b**2) * scale
    cov = (_box_mean(a * b) - mean_a * mean_b) * scale
    numerator = (2 * mean_a * mean_b + _C1) * (2 * cov + _C2)
    denominator = (mean_a**2 + mean_b**2 + _C1) * (var_a + var_b + _C2)
    return float(np.mean(numerator / denominator))


@cache
def _dct_basis(n: int) -> np.ndarray:
    k = np.arange(n)[:, None]
    basis = np.cos(np.pi * (2 * np.arange(n)[None, :] + 1) * k / (2 * n))
    basis[0] /= np.sqrt(2)
    return basis * np.sqrt(2 / n)


def phash(image: np.ndarray) -> int:
    """64-bit perceptual hash of a 32 x 32 image: the signs, against their median, of the 8 x 8
    lowest 2-D DCT frequencies. Nearby images have hashes a few bits apart."""
    basis = _dct_basis(image.shape[0])
    low = (basis @ image.astype(np.float64) @ basis.T)[:HASH_BITS, :HASH_BITS].ravel()
    bits = low > np.median(low)
    return int(np.packbits(bits).view(">u8")[0])


def hamming(a: int, b: int) -> int:
    return (a ^ b).bit_count()
