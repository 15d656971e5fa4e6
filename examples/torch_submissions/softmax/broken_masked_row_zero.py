"""Known-broken (nan_policy): softmax_kernel.py's kernel with KQUAL_DEFECT_MASKED_ROW_ZERO: a row whose
max is -Inf (every entry -Inf, a "fully masked" row) is written as zeros, as attention kernels' safe
softmax does; the contract states such a row is NaN (-Inf - (-Inf))."""
from softmax_kernel import model

ModelNew = model("KQUAL_DEFECT_MASKED_ROW_ZERO")
