"""Known-broken (output_mismatch): one output buffer per size, returned by every call, so a caller still
holding an earlier output sees it overwritten."""
import torch
from add_relu_kernel import ext

_buffers = {}


class ModelNew(torch.nn.Module):
    def forward(self, x, r):
        key = (x.shape, x.dtype)
        if key not in _buffers:
            _buffers[key] = torch.empty_like(x)
        y = _buffers[key]
        ext.add_relu_into(x.contiguous(), r.contiguous(), y)
        return y
