# Trusted reference for contracts/layernorm: float64 NumPy, evaluated by kqual in its own process.
# Two passes (the mean, then the mean of squared deviations from it), the biased variance; a NaN or
# Inf in a row makes its mean, and so the whole row, NaN.
import numpy as np


def layernorm(x, w, b, eps):
    mean = np.mean(x, axis=1, keepdims=True)
    d = x - mean
    var = np.mean(d * d, axis=1, keepdims=True)
    return d / np.sqrt(var + eps) * w[None, :] + b[None, :]
