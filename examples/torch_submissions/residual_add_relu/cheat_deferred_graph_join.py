"""A timing cheat (correct values, do not ship): while its call is captured into a CUDA graph, the
kernel runs on a side stream forked from the capturing one, and the join back is deferred to the end
of the capture (CUDAGraph.capture_end patched), past the end event recorded inside the graph: replayed,
the events close before the kernel ends. kqual times every sample as the GPU span of everything the
call caused, on every stream, from its activity record: timer_patched while timed."""
import torch
from add_relu_kernel import ext

_side = torch.cuda.Stream()
_pending = []
_capture_end = torch.cuda.CUDAGraph.capture_end


def _join_late(self):
    for s in _pending:
        torch.cuda.current_stream().wait_stream(s)
    _pending.clear()
    return _capture_end(self)


torch.cuda.CUDAGraph.capture_end = _join_late


class ModelNew(torch.nn.Module):
    def forward(self, x, r):
        y = torch.empty_like(x)
        if torch.cuda.is_current_stream_capturing():
            _side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(_side):
                ext.add_relu_into(x.contiguous(), r.contiguous(), y)
            _pending.append(_side)
            return y
        ext.add_relu_into(x.contiguous(), r.contiguous(), y)
        return y
