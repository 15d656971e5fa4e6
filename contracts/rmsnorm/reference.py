# Trusted reference for contracts/rmsnorm: float64 NumPy, evaluated by kqual in its own process.
import numpy as np


def rmsnorm(x, w, eps):
    ms = np.mean(x * x, axis=1, keepdims=True)
    return x / np.sqrt(ms + eps) * w[None, :]
