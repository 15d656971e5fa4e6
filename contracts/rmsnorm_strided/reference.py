# Trusted reference for contracts/rmsnorm_strided: float64 NumPy in kqual's reference process. It
# receives x as the dense rows x cols view (the padding between rows removed) and returns y dense.
import numpy as np


def rmsnorm(x, w, eps):
    ms = np.mean(x * x, axis=1, keepdims=True)
    return x / np.sqrt(ms + eps) * w[None, :]
