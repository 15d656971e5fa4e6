"""Known-broken (cached_output): the transpose cached by the input's data_ptr, shape and dtype (as a
submission caching a transposed weight does), the input kept alive with it; new values in the same
tensor get the old transpose."""
import torch
from transpose_kernel import model, transpose

model()  # the extension built at import, as the good submission does
_cache = {}


class ModelNew(torch.nn.Module):
    def forward(self, x):
        key = (x.data_ptr(), tuple(x.shape), x.dtype)
        if key not in _cache:
            _cache[key] = (x, transpose(x))
        return _cache[key][1]
