"""Known-broken (late_result): returns an empty output at once and fills it from a thread a few
milliseconds later, so the call looks instant and the values arrive after the caller has read them."""
import threading
import time

import torch
from add_relu_kernel import ext


class ModelNew(torch.nn.Module):
    def forward(self, x, r):
        y = torch.empty_like(x)
        stream = torch.cuda.current_stream()

        def fill():
            time.sleep(0.02)
            with torch.cuda.stream(stream):
                ext.add_relu_into(x.contiguous(), r.contiguous(), y)
        threading.Thread(target=fill, daemon=True).start()
        return y
