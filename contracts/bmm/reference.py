# Trusted reference for contracts/bmm: float64 NumPy, evaluated by kqual in its own process (also
# on |a|, |b| for the error bound's magnitude).
import numpy as np


def bmm(a, b):
    return np.matmul(a, b)
