# Trusted reference for contracts/swiglu: float64 NumPy, evaluated by kqual in its own process.
# silu(a) = a / (1 + exp(-a)); at a = -Inf that is -Inf / Inf = NaN, so the limit 0 is set there.
# exp(-a) overflowing float64 (a < -709) gives a / Inf = -0, the right limit. The product with b is
# plain IEEE: silu(a) = 0 times b = +-Inf is NaN.
import numpy as np


def swiglu(a, b):
    s = a / (1.0 + np.exp(-a))
    s = np.where(a == -np.inf, 0.0, s)
    return s * b
