"""Known-broken (timer_patched): torch.cuda.synchronize replaced by a function that returns at once,
so a host-timed evaluator stops its clock before the kernels finish."""
import torch
from add_relu_kernel import ModelNew  # noqa: F401

torch.cuda.synchronize = lambda device=None: None
