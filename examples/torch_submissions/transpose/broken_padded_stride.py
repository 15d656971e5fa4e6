"""Known-broken (wrong_result): transpose_kernel.py's kernel with KQUAL_DEFECT_PADDED_STRIDE: x's row
stride taken as the grid's width in tiles times 32 (the padded width) instead of cols, as a kernel
written for sizes that are multiples of the 32-wide tile has it. Right when cols is a multiple of 32 (or
x has one row); otherwise each row after the first is read from the wrong place (and zeros where that
place is past the end of x)."""
from transpose_kernel import model

ModelNew = model("KQUAL_DEFECT_PADDED_STRIDE")
