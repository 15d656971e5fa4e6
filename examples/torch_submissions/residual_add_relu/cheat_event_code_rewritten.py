"""A timing cheat (correct values, do not ship): on its first call it rewrites the code of
torch.cuda.Event.elapsed_time in place (the same function object, so an identity check sees nothing)
to report a quarter of the true time. kqual times from its activity record and compares the events with
it: timer_patched while timed."""
import torch
from add_relu_kernel import add_relu

_done = []


class _Quarter(torch._C._CudaEventBase):
    def elapsed_time(self, end_event):
        return super().elapsed_time(end_event) * 0.25


def _rewrite():
    # The same free variable (__class__, for super()) as the original: the code swaps in place.
    torch.cuda.Event.elapsed_time.__code__ = _Quarter.elapsed_time.__code__


class ModelNew(torch.nn.Module):
    def forward(self, x, r):
        if not _done:
            _rewrite()
            _done.append(1)
        return add_relu(x, r)
