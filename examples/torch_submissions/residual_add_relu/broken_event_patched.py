"""Known-broken (timer_patched): torch.cuda.Event.elapsed_time replaced at import, so an evaluator
timing with CUDA events reads a tenth of the real time."""
import torch
from add_relu_kernel import ModelNew  # noqa: F401

_real = torch.cuda.Event.elapsed_time
torch.cuda.Event.elapsed_time = lambda self, end: _real(self, end) * 0.1
