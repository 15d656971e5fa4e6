# Trusted reference for contracts/swiglu: float64 NumPy, evaluated by kqual in its own process.
# silu(a) = a / (1 + exp(-a)) as PyTorch evaluates it (ATen's silu kernel): at a = -Inf that is
# -Inf / Inf = NaN, which the contract keeps (PyTorch's value, not the limit 0). exp(-a) overflowing
# float64 (a < -709) gives a / Inf = -0. The product with b is plain IEEE: NaN * b = NaN, 0 * Inf = NaN.
import numpy as np


def swiglu(a, b):
    return a / (1.0 + np.exp(-a)) * b
