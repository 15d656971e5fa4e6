"""Known-broken (nan_policy): the sum's NaN turned into 0 by relu written as max(s, 0) in the kernel
(fmaxf drops a NaN operand)."""
import torch
import triton
import triton.language as tl


@triton.jit
def _add_relu_max(x_ptr, r_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    s = tl.load(x_ptr + offs, mask=mask).to(tl.float32) + tl.load(r_ptr + offs, mask=mask).to(tl.float32)
    y = tl.maximum(s, 0.0)
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x, r):
        x, r = x.contiguous(), r.contiguous()
        y = torch.empty_like(x)
        if x.numel():
            _add_relu_max[(triton.cdiv(x.numel(), 1024),)](x, r, y, x.numel(), BLOCK=1024)
        return y
