"""Known-broken (wrong_result): transpose_kernel.py's kernel with KQUAL_DEFECT_THROUGH_FLOAT: every
float32, bfloat16 and float16 element passes through a float addition of +0 on its way (as a kernel
written for y = x^T + bias with the bias zero does), so -0 comes out +0 (and a NaN's payload need not
survive). The contract's transpose is bit-exact; int32 is copied as bits."""
from transpose_kernel import model

ModelNew = model("KQUAL_DEFECT_THROUGH_FLOAT")
