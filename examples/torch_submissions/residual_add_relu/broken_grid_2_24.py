"""Known-broken (wrong_result): add_relu_kernel.py's kernel with KQUAL_DEFECT_GRID_2_24: one element per
thread and the grid capped at 65,536 blocks of 256, so only the first 2^24 elements are written. Right at
every size up to 2^24; the elements past it keep whatever the output held."""
import torch
from add_relu_kernel import build

_ext = build("KQUAL_DEFECT_GRID_2_24")


class ModelNew(torch.nn.Module):
    def forward(self, x, r):
        y = torch.empty_like(x)
        _ext.add_relu_into(x.contiguous(), r.contiguous(), y)
        return y
