"""Known-broken (reference_called): PyTorch's own operators do the work (ATen kernels); the values
are right, the submission has no kernel of its own."""
import torch


class ModelNew(torch.nn.Module):
    def forward(self, x, r):
        return torch.relu(x + r)
