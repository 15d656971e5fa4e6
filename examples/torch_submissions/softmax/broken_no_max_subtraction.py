"""Known-broken (nan_policy): softmax_kernel.py's kernel with KQUAL_DEFECT_NO_MAX_SUBTRACTION: exp(x) /
sum exp(x) without the row's max subtracted. Right for small logits; past x = 88.7 exp overflows to Inf
(Inf / Inf = NaN), and a row whose logits all lie below about -103.9 underflows to 0 / 0 = NaN, so rows
of large logits come out NaN where the contract's softmax is finite."""
from softmax_kernel import model

ModelNew = model("KQUAL_DEFECT_NO_MAX_SUBTRACTION")
