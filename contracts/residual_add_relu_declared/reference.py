# Reference for contracts/residual_add_relu_declared. The inputs arrive widened to float64; the sum
# of two f32 (or bf16) values is exact in float64, and kqual rounds it once to the output dtype,
# which equals one IEEE add in f32 (bf16: the f32 sum rounded to bf16 = the exact sum rounded once,
# since the f32 rounding of a sum of two bf16 values is exact or far from a bf16 tie).
import numpy as np


def residual_add_relu(x, r):
    s = np.add(x, r, out=x)          # x is this call's own copy
    np.maximum(s, 0.0, out=s)        # NaN propagates; -Inf -> 0; -0 -> +-0 ...
    s += 0.0                         # ... and -0 + 0 = +0
    return s
