"""Known-broken (calls_reference): the custom kernel for square inputs only, PyTorch's own
`x.t().contiguous()` for every other shape (a fallback a campaign's submission is seen to carry). The
values are right; the work is the reference's: its copy kernel, which kqual allows by default as
memory traffic, is the one kernel the problem's own PyTorch form launches."""
import torch
from transpose_kernel import model, transpose

model()  # the extension built at import, as the good submission does


class ModelNew(torch.nn.Module):
    def forward(self, x):
        if x.shape[0] == x.shape[1]:
            return transpose(x)
        return x.t().contiguous()
