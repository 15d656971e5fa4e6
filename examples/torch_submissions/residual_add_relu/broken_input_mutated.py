"""Known-broken (input_mutated): the result written into x (saving an allocation), which changes the
caller's input."""
import torch
from add_relu_kernel import ext


class ModelNew(torch.nn.Module):
    def forward(self, x, r):
        ext.add_relu_into(x, r.contiguous(), x)
        return x
