# Trusted reference for contracts/int8_row_quantize: float64 NumPy, evaluated by kqual in its own
# process. q is declared `quantized` (half to even, clamped to [-127, 127]), so this returns the REAL
# value x / scale, never the rounded code: kqual rounds and clamps it.
import numpy as np


def int8_row_quantize(x):
    amax = np.max(np.abs(x), axis=1, keepdims=True)
    scale = amax / 127.0
    # q divides by the scale as stored, an f32 (what a dequantization multiplies q by): x / scale32 is
    # exact where the quotient is representable (the ties family's rows whose max is 127 have
    # scale32 = 1: their halves stay exact ties) and otherwise off a rounding boundary by far more than
    # 2^-53, so a kernel's f32 quotient (x / scale, or x * (127 / max)) lands within the band of
    # either neighbour. 127 x / max itself would put exact ties at x = max / 2 (63.5) that no f32
    # formula computes exactly. An all-zero row: q = 0, scale = 0 (the policy).
    scale32 = scale.astype(np.float32).astype(np.float64)
    safe = np.where(amax > 0, scale32, 1.0)
    q = np.where(amax > 0, x / safe, 0.0)
    return q, scale[:, 0]
