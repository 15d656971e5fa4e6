"""Known-broken (unjoined_stream): the kernel runs on a side stream that waits for the caller's stream
but is never joined back, so the caller's events (and a caller reading the output) do not wait for it."""
import torch
from transpose_kernel import model, transpose

model()  # the extension built at import, as the good submission does
_side = None


class ModelNew(torch.nn.Module):
    def forward(self, x):
        global _side
        if _side is None:
            _side = torch.cuda.Stream()
        _side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(_side):
            y = transpose(x)
        return y  # no torch.cuda.current_stream().wait_stream(_side)
