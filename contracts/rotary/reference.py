# Trusted reference for contracts/rotary: float64 NumPy, evaluated by kqual in its own process.
import numpy as np


def rotary(x, cos, sin, half):
    x1 = x[..., :half]
    x2 = x[..., half:]
    c = cos[:, None, :]  # [tokens, 1, half]: the same angles for every head
    s = sin[:, None, :]
    return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)
