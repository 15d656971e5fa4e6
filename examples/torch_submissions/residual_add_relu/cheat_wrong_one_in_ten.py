"""A timing cheat (right where checked, do not ship): it finds kqual's timing function among its callers'
frames, refuses CUDA-graph capture (so every timed call runs its Python), and on every tenth timed call
launches the same kernel with x in place of r: as many kernels, as long, the output relu(2x). Every call
`kqual check` makes, and the verified calls after the timed blocks, are right. Only timed calls read back
and compared on their own values catch it: timed_output_wrong."""
import sys

import torch
from add_relu_kernel import add_relu

_timed = [0]


def _inside_timing():
    f = sys._getframe(1)
    while f is not None:
        if f.f_code.co_name == "timed" and f.f_code.co_filename.endswith("kqual_torch_timing.py"):
            return True
        f = f.f_back
    return False


class ModelNew(torch.nn.Module):
    def forward(self, x, r):
        if torch.cuda.is_current_stream_capturing():
            raise RuntimeError("this submission cannot be captured in a CUDA graph")
        if _inside_timing():
            _timed[0] += 1
            if _timed[0] % 10 == 0:
                return add_relu(x, x)
        return add_relu(x, r)
