# Trusted reference for contracts/fp8_e4m3_quantize: float64 NumPy, evaluated by kqual in its own
# process. q is declared `quantized` with saturate = true, so this returns the REAL value x / scale
# (never the rounded one): kqual rounds it to e4m3 (nearest even), saturates past +-448 and at +-Inf,
# keeps NaN, and admits either neighbour only near a rounding boundary.
import numpy as np


def fp8_e4m3_quantize(x, scale):
    # x / scale of two f32 values in float64: within 2^-53 relative of the exact quotient, and exact
    # where the quotient is representable (the ties family: scale 1).
    return x / scale[0]
