"""The copy quality gate's measuring: SSIM and a DCT perceptual hash on small grayscale frames."""

from videocopies.adapters.quality.inspector import PyAvCopyInspector

__all__ = ["PyAvCopyInspector"]
