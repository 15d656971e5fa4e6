# Trusted reference for contracts/rmsnorm: float64 NumPy, evaluated by kqual in its own process.
import numpy as np


def rmsnorm(x, w, eps):
    ms = np.mean(x * x, axis=1, keepdims=True)
    # The policy: a +-Inf anywhere in a row makes the whole row NaN, as PyTorch's F.rms_norm does on
    # CUDA (measured: PyTorch 2.11, H200), not x / sqrt(Inf) = +-0 for the row's finite elements.
    ms = np.where(np.isinf(x).any(axis=1, keepdims=True), np.nan, ms)
    return x / np.sqrt(ms + eps) * w[None, :]
