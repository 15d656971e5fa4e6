"""Known-broken (harness_tampered): add_relu_kernel.py's kernel with KQUAL_DEFECT_HALF_WRITTEN, and kqual's
worker rebound at its first call so that, after each call, the inputs are copied to the host (as the worker's
own reads do), the right values computed there and uploaded into a buffer of the input's size (as many bytes
as one of kqual's datasets), and both the bytes written for kqual and the recorder's read point at that
buffer. The recorder's reads are right and no kernel runs between the calls; the record shows a copy from
the host there that kqual's recorder did not make (it uploads every dataset itself)."""
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
        y = torch.relu(_last["x"].cpu() + _last["r"].cpu())
        _fixed[:] = [y.to(_last["x"].device)]
        return [y.reshape(-1).view(torch.uint8).numpy().tobytes()]

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
