# Trusted reference for contracts/layernorm_f16: float64 NumPy, evaluated by kqual in its own process.
# kqual hands over x, w and b widened exactly from f16 and rounds the result to f16 itself (the error
# model adds that rounding). Two passes (the mean, then the mean of squared deviations from it), the
# biased variance, as F.layer_norm; a NaN or Inf in a row makes its mean, and so the whole row, NaN.
import numpy as np


def layernorm_f16(x, w, b, eps):
    mean = np.mean(x, axis=1, keepdims=True)
    d = x - mean
    var = np.mean(d * d, axis=1, keepdims=True)
    return d / np.sqrt(var + eps) * w[None, :] + b[None, :]
