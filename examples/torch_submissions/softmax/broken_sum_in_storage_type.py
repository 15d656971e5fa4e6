"""Known-broken (wrong_result): softmax_kernel.py's kernel with KQUAL_DEFECT_SUM_IN_STORAGE_TYPE: the
row sum of exp(x - max) rounded to the input's dtype after every addition (accumulated in bfloat16 or
float16, as a kernel whose accumulator is scalar_t does). float32 is unaffected; bfloat16 and float16
outputs are off by more than the contract's bound (already on bfloat16 rows of 33 columns)."""
from softmax_kernel import model

ModelNew = model("KQUAL_DEFECT_SUM_IN_STORAGE_TYPE")
