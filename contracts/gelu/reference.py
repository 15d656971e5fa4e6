# Trusted reference for contracts/gelu: float64 NumPy, evaluated by kqual in its own process.
# 0.5 x (1 + tanh(u)) is evaluated as x / (1 + exp(-2u)), the same function without the
# cancellation of 1 + tanh(u) for negative x, and with the same special values as PyTorch's
# 0.5 x (1 + tanh(u)): at x = -Inf, x / (1 + exp(+Inf)) = -Inf / Inf = NaN (PyTorch: -Inf * 0 = NaN);
# +Inf gives +Inf, NaN stays NaN; exp(-2u) overflowing float64 gives x / Inf = -0.
import numpy as np

_SQRT_2_OVER_PI = np.sqrt(2.0 / np.pi)


def gelu(x):
    u = _SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)
    return x / (1.0 + np.exp(-2.0 * u))
