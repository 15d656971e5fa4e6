"""Known-broken (reference_called): a kernel that handles only sizes that are multiples of 8, and a
try/except that falls back to PyTorch's operators for every other size."""
import torch
from add_relu_kernel import add_relu


class ModelNew(torch.nn.Module):
    def forward(self, x, r):
        try:
            if x.numel() % 8:
                raise ValueError("vector path needs a multiple of 8")
            return add_relu(x, r)
        except ValueError:
            return torch.relu(x + r)
