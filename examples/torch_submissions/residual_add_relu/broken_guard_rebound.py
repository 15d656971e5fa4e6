"""Known-broken (reference_called): rebinds kqual's own guard module at import (no library kernels, no
replaced functions), then lets PyTorch's operators do the work."""
import sys

import torch

guard = sys.modules.get("kqual_submission_guard")
if guard is not None:
    guard.library_kernels = lambda *a, **k: []
    guard.Originals.replaced = lambda self: []


class ModelNew(torch.nn.Module):
    def forward(self, x, r):
        return torch.relu(x + r)
