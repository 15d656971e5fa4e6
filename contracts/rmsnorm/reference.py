# Trusted reference for contracts/rmsnorm: float64 NumPy, evaluated by kqual in its own process.
import numpy as np


def rmsnorm(x, w, eps):
    ms = np.mean(x * x, axis=1, keepdims=True)
    # The policy: a +-Inf anywhere in a row makes the whole row NaN, as PyTorch's F.rms_norm gave on
    # CUDA in some cases (PyTorch 2.11, H200 and H100) ...
    ms = np.where(np.isinf(x).any(axis=1, keepdims=True), np.nan, ms)
    return x / np.sqrt(ms + eps) * w[None, :]


def rmsnorm_literal(x, w, eps):
    # ... and in others x * rsqrt(Inf) = +-0 for the row's finite elements (H100): [reference]
    # alternative, accepted where rmsnorm's output is NaN. A NaN row stays NaN here too.
    return x / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + eps) * w[None, :]
