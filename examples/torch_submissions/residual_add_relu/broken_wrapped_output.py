"""Known-broken (output_mismatch): the output returned as a tensor subclass whose values are only
computed when they are read (a lazy result), not as a plain CUDA tensor."""
import torch
from add_relu_kernel import add_relu


class Lazy(torch.Tensor):
    pass


class ModelNew(torch.nn.Module):
    def forward(self, x, r):
        return add_relu(x, r).as_subclass(Lazy)
