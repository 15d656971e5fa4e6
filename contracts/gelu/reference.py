# Trusted reference for contracts/gelu: float64 NumPy, evaluated by kqual in its own process.
# 0.5 x (1 + tanh(u)) is evaluated as x / (1 + exp(-2u)), the same function without the
# cancellation of 1 + tanh(u) for negative x; -Inf is mapped to the limit 0 (there x / (1 + exp(+Inf))
# is -Inf / Inf = NaN), +Inf gives +Inf, NaN stays NaN.
import numpy as np

_SQRT_2_OVER_PI = np.sqrt(2.0 / np.pi)


def gelu(x):
    u = _SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)
    y = x / (1.0 + np.exp(-2.0 * u))
    return np.where(x == -np.inf, 0.0, y)
