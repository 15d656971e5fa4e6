"""Known-broken (wrong_stream): the kernel launched on the legacy default stream (`<<<grid, block>>>`
with stream 0) while the output is zero-filled on the caller's stream: nothing orders the two, so the
kernel may run before the fill, as real KernelBench solutions do."""
import torch
from add_relu_kernel import build

_ext = build("KQUAL_DEFECT_LEGACY_STREAM")


class ModelNew(torch.nn.Module):
    def forward(self, x, r):
        y = torch.zeros_like(x)
        _ext.add_relu_into(x.contiguous(), r.contiguous(), y)
        return y
