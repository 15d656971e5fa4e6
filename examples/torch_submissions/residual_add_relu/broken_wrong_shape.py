"""Known-broken (output_mismatch): the right values in an output of the wrong shape with the right number
of elements."""
import torch
from add_relu_kernel import add_relu


class ModelNew(torch.nn.Module):
    def forward(self, x, r):
        return add_relu(x, r).reshape(1, -1)
