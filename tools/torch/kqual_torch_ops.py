"""The six built-in contracts as PyTorch operations: kqual's torch_eager and torch_compiled baselines.

One table, keyed by the contract's name (src/contract/<name>.cpp gives tensors, layouts and dtypes;
src/bench/torch_baseline_request.cpp sends the contract's name, each tensor's dtype and shape):

  fn       the operation as one functional PyTorch expression; torch_compiled compiles exactly this
           function (nothing of kqual's around it), once per shape.
  out_fn   the same operation writing into preallocated outputs (`out=`, or an in-place copy), or
           None. torch_eager runs it; it is captured into a CUDA graph with the inputs and outputs
           as static tensors, so that neither Python dispatch nor output allocation is in the timed
           window. Where out_fn raises on this torch (an op without an out= overload), the worker
           captures fn instead: the graph's private pool makes its allocation static all the same.

Every expression is the plain one-liner a PyTorch user would write, in the contract's dtype; what
the contract's numerical policy needs (no TF32 in gemm, f32 accumulation of bf16 and f16 sums) is set in
the worker (timing_worker.py, precision_settings), not here.
"""
import torch
import torch.nn.functional as F


class Op:
    def __init__(self, inputs, outputs, dtypes, fn, out_fn, text):
        self.inputs = inputs      # tensor names, in fn's argument order
        self.outputs = outputs    # tensor names, in fn's result order
        self.dtypes = dtypes      # the contract's dtypes this expression is right for
        self.fn = fn
        self.out_fn = out_fn
        self.text = text          # what the report names: the PyTorch expression


def _add_relu_out(x, r, y):
    torch.add(x, r, out=y)
    torch.relu_(y)


def _softmax_out(x, y):
    # torch.softmax's out= overload is recent; the aten op underneath has had one for longer.
    try:
        torch.softmax(x, -1, out=y)
    except TypeError:
        torch.ops.aten._softmax.out(x, -1, False, out=y)


def _exclusive_scan(x):
    # Inclusive cumsum of x[0..n-2], shifted right by one with a zero in front: exact wherever the
    # contract is exact (i32 wraps modulo 2^32 either way) and no extra rounding for f32.
    # cumsum(x) - x is not used: for f32 it rounds twice and turns a +Inf input into NaN.
    # dtype=x.dtype keeps i32 in i32 (cumsum promotes integers to i64 by default).
    return F.pad(torch.cumsum(x[:-1], 0, dtype=x.dtype), (1, 0))


def _exclusive_scan_out(x, y):
    y[:1].zero_()
    torch.cumsum(x[:-1], 0, dtype=x.dtype, out=y[1:])


def _transpose_out(x, y):
    # y (cols x rows, row-major) from x (rows x cols, row-major): one strided copy.
    y.copy_(x.t())


def _gemm_out(a, b, c):
    torch.mm(a, b, out=c)


def _reduce_sum_out(x, y):
    torch.sum(x, dim=1, out=y)


OPS = {
    # y = relu(x + r), n elements (src/contract/builtin/residual_add_relu.cpp).
    "residual_add_relu": Op(["x", "r"], ["y"], ["f32", "bf16", "f16"], lambda x, r: torch.relu(x + r), _add_relu_out,
                            "torch.relu(x + r)"),
    # y = softmax over each row of a rows x cols row-major x (src/contract/builtin/softmax.cpp).
    "softmax": Op(["x"], ["y"], ["f32", "bf16", "f16"], lambda x: torch.softmax(x, dim=-1), _softmax_out,
                  "torch.softmax(x, dim=-1)"),
    # y[0] = 0, y[i] = x[0] + ... + x[i-1], n elements, i32 (wrapping) or f32 (src/contract/builtin/exclusive_scan.cpp).
    "exclusive_scan": Op(["x"], ["y"], ["i32", "f32"], _exclusive_scan, _exclusive_scan_out,
                         "F.pad(torch.cumsum(x[:-1], 0, dtype=x.dtype), (1, 0))"),
    # y (cols x rows) = x (rows x cols) transposed, both row-major, bit copy (src/contract/builtin/transpose.cpp).
    "transpose": Op(["x"], ["y"], ["f32", "bf16", "f16", "i32"], lambda x: x.t().contiguous(), _transpose_out,
                    "x.t().contiguous()"),
    # c (m x n) = a (m x k) @ b (k x n), row-major, no alpha/beta, f32 accumulation (src/contract/builtin/gemm.cpp).
    "gemm": Op(["a", "b"], ["c"], ["f32", "bf16", "f16"], lambda a, b: torch.matmul(a, b), _gemm_out, "torch.matmul(a, b)"),
    # y[r] = sum of row r of a rows x cols row-major x (src/contract/builtin/reduce_sum.cpp).
    "reduce_sum": Op(["x"], ["y"], ["f32", "bf16", "f16"], lambda x: torch.sum(x, dim=1), _reduce_sum_out,
                     "torch.sum(x, dim=1)"),
}


def check_request(name, inputs, outputs):
    """The op for contract `name`, after checking the request's tensors against it (names, dtypes,
    shapes that agree with each other). Raises ValueError with a sentence naming what is wrong."""
    op = OPS.get(name)
    if op is None:
        raise ValueError("no PyTorch operation for contract %r (the worker knows %s)" % (name, ", ".join(sorted(OPS))))
    got_in, got_out = sorted(inputs), [o["name"] for o in outputs]
    if got_in != sorted(op.inputs) or got_out != op.outputs:
        raise ValueError("contract %s: the worker's operation takes inputs %s and writes %s; the request has inputs %s and outputs %s"
                         % (name, op.inputs, op.outputs, got_in, got_out))
    for t in list(inputs.values()) + list(outputs):
        if t["dtype"] not in op.dtypes:
            raise ValueError("contract %s: dtype %s is not one of %s" % (name, t["dtype"], op.dtypes))
        if any(int(d) < 1 for d in t["shape"]):
            raise ValueError("contract %s: empty shape %s" % (name, t["shape"]))
    return op
