# Trusted reference for contracts/fp8_e4m3_dequantize: float64 NumPy, evaluated by kqual in its own
# process. kqual hands q over widened exactly (every e4m3 code as its value, NaN as NaN); the product
# of a 4-bit and a 24-bit significand is exact in float64, and kqual rounds it once to f32: the
# value a kernel's single f32 multiplication gives, bit for bit.
import numpy as np


def fp8_e4m3_dequantize(q, scale):
    return q * scale[0]
