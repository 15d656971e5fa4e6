"""Known-broken (reference_called): the load_inline kernel (softmax_kernel.py) for rows of up to 2048
columns, and torch.softmax (ATen's cunn_SoftMaxForward kernels) for longer rows, as a submission
tuned for short rows falls back. The values are right; the long rows are not the submission's work."""
import torch
from softmax_kernel import model, softmax

model()  # the extension built at import, as the good submission does


class ModelNew(torch.nn.Module):
    def forward(self, x):
        if x.shape[-1] > 2048:
            return torch.softmax(x, dim=-1)
        return softmax(x)
