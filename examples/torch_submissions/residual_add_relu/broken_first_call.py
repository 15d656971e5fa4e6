"""Known-broken (first_call_differs): the first call returns before its kernel was launched (an
uninitialised output, as a lazily initialised path can), later calls are right."""
import torch
from add_relu_kernel import add_relu

_warm = [False]


class ModelNew(torch.nn.Module):
    def forward(self, x, r):
        if not _warm[0]:
            _warm[0] = True
            return torch.full_like(x, 7.0)
        return add_relu(x, r)
