# Reference for contracts/softmax_declared: float64, max-subtracting, NaN rows as a plain kernel makes them.
import numpy as np


def softmax(x):
    m = np.max(x, axis=1, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=1, keepdims=True)
