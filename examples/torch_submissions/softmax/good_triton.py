"""Correct: softmax along each row in a Triton kernel, one program per row: the row's max, the sum of
exp(x - max) and the outputs in float32 (loops over the row in blocks), output rounded once to the
dtype. A NaN or +Inf in a row, or a row of only -Inf, makes the row NaN (through exp and the sum), as
the contract states."""
import torch
import triton
import triton.language as tl


@triton.jit
def _softmax_rows(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    xr = x_ptr + row * cols
    yr = y_ptr + row * cols
    offs = tl.arange(0, BLOCK)
    top = tl.full([BLOCK], float("-inf"), tl.float32)
    for start in range(0, cols, BLOCK):
        idx = start + offs
        top = tl.maximum(top, tl.load(xr + idx, mask=idx < cols, other=float("-inf")).to(tl.float32))
    m = tl.max(top, axis=0)
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, cols, BLOCK):
        idx = start + offs
        mask = idx < cols
        v = tl.load(xr + idx, mask=mask, other=0.0).to(tl.float32)
        acc += tl.where(mask, tl.exp(v - m), 0.0)
    s = tl.sum(acc, axis=0)
    for start in range(0, cols, BLOCK):
        idx = start + offs
        mask = idx < cols
        v = tl.load(xr + idx, mask=mask, other=0.0).to(tl.float32)
        tl.store(yr + idx, (tl.exp(v - m) / s).to(y_ptr.dtype.element_ty), mask=mask)


def softmax(x):
    x = x.contiguous()
    y = torch.empty_like(x)
    rows, cols = x.shape
    if x.numel():
        block = min(4096, max(128, triton.next_power_of_2(cols)))
        _softmax_rows[(rows,)](x, y, cols, BLOCK=block, num_warps=4 if block <= 1024 else 8)
    return y


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return softmax(x)
