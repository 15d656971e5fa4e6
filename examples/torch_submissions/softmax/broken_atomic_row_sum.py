"""Known-broken (nondeterministic): softmax_kernel.py's kernel with KQUAL_DEFECT_ATOMIC_ROW_SUM: each
warp's part of a row's sum added with atomicAdd to one shared float, so the order of the additions (and
the sum's last bits) changes from run to run. Every output is within the contract's bound; two calls on
the same values differ, and the softmax contract requires the same bits."""
from softmax_kernel import model

ModelNew = model("KQUAL_DEFECT_ATOMIC_ROW_SUM")
