"""Known-broken (cached_output): the output cached by the inputs' data_ptr and shape, as a
benchmark-gaming submission does; new values in the same tensors get the old output."""
import torch
from add_relu_kernel import add_relu

_cache = {}


class ModelNew(torch.nn.Module):
    def forward(self, x, r):
        key = (x.data_ptr(), r.data_ptr(), tuple(x.shape), x.dtype)
        if key not in _cache:
            _cache[key] = add_relu(x, r)
        return _cache[key]
