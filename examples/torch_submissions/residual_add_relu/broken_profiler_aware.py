"""Known-broken (reference_called): PyTorch's own operators do the work except while the PyTorch
profiler is on, when the submission's kernel does."""
import torch
from add_relu_kernel import add_relu


class ModelNew(torch.nn.Module):
    def forward(self, x, r):
        if torch.autograd.profiler._is_profiler_enabled:
            return add_relu(x, r)
        return torch.relu(x + r)
