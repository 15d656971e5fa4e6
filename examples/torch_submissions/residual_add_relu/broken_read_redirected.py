"""Known-broken (harness_tampered): add_relu_kernel.py's kernel with KQUAL_DEFECT_HALF_WRITTEN, and kqual's
worker rebound at import so that, after each call, PyTorch computes the right values into a buffer of its
own and both the bytes written for kqual and the recorder's read point at that buffer instead of the
output. The recorder's reads are right; the record shows ATen's kernels running between the calls,
which kqual's worker never launches there."""
import sys

import torch
from add_relu_kernel import build

_ext = build("KQUAL_DEFECT_HALF_WRITTEN")
_last = {}
_fixed = []

_worker = sys.modules.get("__main__")
if _worker is not None and hasattr(_worker, "read_natively"):
    def host_bytes(outs):
        y = torch.relu(_last["x"] + _last["r"])
        _fixed[:] = [y]
        return [y.reshape(-1).view(torch.uint8).cpu().numpy().tobytes()]

    def read_natively(r, prefix, outs):
        for w, y in zip(r["outputs"], _fixed or outs):
            _worker.recorder.read("%s:%s" % (prefix, w["name"]), y)
    _worker.host_bytes = host_bytes
    _worker.read_natively = read_natively


class ModelNew(torch.nn.Module):
    def forward(self, x, r):
        _last["x"], _last["r"] = x, r
        y = torch.empty_like(x)
        _ext.add_relu_into(x.contiguous(), r.contiguous(), y)
        return y
