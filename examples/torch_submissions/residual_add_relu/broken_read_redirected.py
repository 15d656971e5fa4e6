"""Known-broken (harness_tampered): add_relu_kernel.py's kernel with KQUAL_DEFECT_HALF_WRITTEN, and kqual's
worker rebound at its first call so that, after each call, PyTorch computes the right values into a buffer of its
own and both the bytes written for kqual and the recorder's read point at that buffer instead of the
output. The recorder's reads are right; the record shows ATen's kernels running between the calls,
which kqual's worker never launches there."""
import sys

import torch
from add_relu_kernel import build

_ext = build("KQUAL_DEFECT_HALF_WRITTEN")
_last = {}
_fixed = []

def _rebind():
    """Once kqual's worker has defined its functions (the submission is imported before they exist)."""
    w = sys.modules.get("__main__")
    if w is None or not hasattr(w, "read_natively") or getattr(w, "_rebound", False):
        return

    def host_bytes(outs):
        y = torch.relu(_last["x"] + _last["r"])
        _fixed[:] = [y]
        return [y.reshape(-1).view(torch.uint8).cpu().numpy().tobytes()]

    def read_natively(r, prefix, outs):
        for o, y in zip(r["outputs"], _fixed or outs):
            w.recorder.read("%s:%s" % (prefix, o["name"]), y)
    w.host_bytes = host_bytes
    w.read_natively = read_natively
    w._rebound = True


class ModelNew(torch.nn.Module):
    def forward(self, x, r):
        _rebind()
        _last["x"], _last["r"] = x, r
        y = torch.empty_like(x)
        _ext.add_relu_into(x.contiguous(), r.contiguous(), y)
        return y
