"""Known-broken (timer_patched): time.perf_counter replaced during the first call (not at import),
so a host-timed evaluator's clock runs at half speed from then on."""
import time

import torch
from add_relu_kernel import add_relu

_real = time.perf_counter


class ModelNew(torch.nn.Module):
    def forward(self, x, r):
        time.perf_counter = lambda: _real() * 0.5
        return add_relu(x, r)
