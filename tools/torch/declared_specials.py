#!/usr/bin/env python3
"""PyTorch's own result on the bundled declared contracts' cases: the check that each contract's
special-value policy (NaN, +-Inf, -0, subnormals, magnitudes where exp or x^3 overflow) is the one
PyTorch eager has on CUDA. tests/device/declared_specials_device_test.cpp writes the cases (inputs
in their storage dtype, outputs pre-filled with the harness's poison), runs this script once, and
judges what it wrote with each contract's own comparison, as it judges a kernel.

Usage: declared_specials.py REQUEST_JSON
  REQUEST: {"cases": [{"contract", "id", "dtype" ("f32" | "bf16": the case's dtype row),
                       "inputs": {name: {"file", "dtype", "elements", "row_length", "row_stride"}},
                       "outputs": [{"name", "file", "dtype", "elements", "row_length", "row_stride"}],
                       "axes": {name: int}, "scalars": {name: float}}]}
  row_stride > 0: the tensor is `elements` of storage holding rows of row_length elements one every
  row_stride (the padding is left as it is: the output's poison must survive).
Each output file is rewritten in place. One JSON line on stdout:
  {"ok": true, "torch", "device", "precision", "forms": {contract: expression},
   "cases": [{"id", "ok", "error"?}]}
  or {"ok": false, "code": "no_torch" | "no_cuda" | "usage", "error"}.
"""
import json
import sys
import traceback


def reply(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


try:
    import torch
    import torch.nn.functional as F
except BaseException as e:  # noqa: BLE001 - any import failure means "no PyTorch here"
    reply({"ok": False, "code": "no_torch", "error": "".join(traceback.format_exception_only(type(e), e)).strip()})
    sys.exit(0)
if not torch.cuda.is_available():
    reply({"ok": False, "code": "no_cuda", "error": "torch %s: torch.cuda.is_available() is False" % torch.__version__})
    sys.exit(0)


class Form:
    """A contract's operation as a PyTorch user writes it.

    shapes   per tensor, its axes (the harness sends the case's axes)
    widen    for the bf16 row: run on the inputs widened to f32 and round the result once. Set where
             PyTorch's bf16 expression would round more than once (an op chain, silu then *) or
             would refuse the contract's mixed row (bf16 x with f32 weights): the contracts round
             once, and PyTorch's bf16 kernels compute in f32 inside (opmath), so the special-value
             semantics under test are the same. Unset: the op runs in the case's own dtypes.
    """

    def __init__(self, inputs, outputs, shapes, fn, text, widen=False):
        self.inputs, self.outputs, self.shapes, self.fn, self.text, self.widen = inputs, outputs, shapes, fn, text, widen


def _rotary(x, cos, sin):
    # Rotate-half RoPE as Hugging Face's apply_rotary_pos_emb writes it: x * cos + rotate_half(x) * sin,
    # the angles repeated over both halves and broadcast over heads. f32 cos/sin promote a bf16 x to f32.
    half = x.shape[-1] // 2
    c = torch.cat([cos, cos], dim=-1)[:, None, :]
    s = torch.cat([sin, sin], dim=-1)[:, None, :]
    rot = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * c + rot * s


FORMS = {
    "swiglu": Form(["a", "b"], ["y"], {"a": ["n"], "b": ["n"], "y": ["n"]},
                   lambda a, b, **_: F.silu(a) * b, "F.silu(a) * b", widen=True),
    "gelu": Form(["x"], ["y"], {"x": ["n"], "y": ["n"]},
                 lambda x, **_: F.gelu(x, approximate="tanh"), "F.gelu(x, approximate='tanh')"),
    "residual_add_relu_declared": Form(["x", "r"], ["y"], {"x": ["n"], "r": ["n"], "y": ["n"]},
                                       lambda x, r, **_: torch.relu(x + r), "torch.relu(x + r)"),
    "softmax_declared": Form(["x"], ["y"], {"x": ["rows", "cols"], "y": ["rows", "cols"]},
                             lambda x, **_: torch.softmax(x, dim=-1), "torch.softmax(x, dim=-1)"),
    "bmm": Form(["a", "b"], ["c"], {"a": ["batch", "m", "k"], "b": ["batch", "k", "n"], "c": ["batch", "m", "n"]},
                lambda a, b, **_: torch.bmm(a, b), "torch.bmm(a, b)"),
    "layernorm": Form(["x", "w", "b"], ["y"], {"x": ["rows", "cols"], "w": ["cols"], "b": ["cols"], "y": ["rows", "cols"]},
                      lambda x, w, b, eps, **_: F.layer_norm(x, (x.shape[-1],), w, b, eps),
                      "F.layer_norm(x, (cols,), w, b, eps)", widen=True),
    "rmsnorm": Form(["x", "w"], ["y"], {"x": ["rows", "cols"], "w": ["cols"], "y": ["rows", "cols"]},
                    lambda x, w, eps, **_: F.rms_norm(x, (x.shape[-1],), w, eps),
                    "F.rms_norm(x, (cols,), w, eps)", widen=True),
    "rmsnorm_strided": Form(["x", "w"], ["y"], {"x": ["rows", "cols"], "w": ["cols"], "y": ["rows", "cols"]},
                            lambda x, w, eps, **_: F.rms_norm(x, (x.shape[-1],), w, eps),
                            "F.rms_norm(x, (cols,), w, eps) on the strided rows", widen=True),
    "rotary": Form(["x", "cos", "sin"], ["y"],
                   {"x": ["tokens", "heads", "d"], "cos": ["tokens", "half"], "sin": ["tokens", "half"], "y": ["tokens", "heads", "d"]},
                   lambda x, cos, sin, **_: _rotary(x, cos, sin), "x * cos + rotate_half(x) * sin"),
}

DT = {"f32": torch.float32, "bf16": torch.bfloat16, "f64": torch.float64}
dev = torch.device("cuda")


def precision_settings():
    """The contracts' matmul policy (bmm): f32 products and sums in IEEE f32, bf16 accumulated in f32."""
    said, m = [], torch.backends.cuda.matmul
    try:
        if hasattr(m, "fp32_precision"):
            m.fp32_precision = "ieee"
        else:
            m.allow_tf32 = False
        said.append("TF32 off")
    except Exception as e:  # noqa: BLE001
        said.append("TF32 NOT turned off (%s)" % e)
    try:
        m.allow_bf16_reduced_precision_reduction = False
        said.append("bf16 matmul reductions in f32")
    except Exception as e:  # noqa: BLE001
        said.append("bf16 reduced-precision reductions NOT turned off (%s)" % e)
    return "; ".join(said)


def storage(t):
    """The file's bytes as a CUDA tensor of the tensor's dtype (its whole storage)."""
    with open(t["file"], "rb") as f:
        raw = bytearray(f.read())
    s = torch.frombuffer(raw, dtype=torch.uint8).view(DT[t["dtype"]])
    if s.numel() != int(t["elements"]):
        raise ValueError("%s: %d elements in the file, %d announced" % (t["file"], s.numel(), int(t["elements"])))
    return s.to(dev)


def as_bytes(s):
    u = s.contiguous().reshape(-1).cpu().view(torch.uint8)  # reshape: [n, 1] with strides (1, n) is "contiguous"
    try:
        return u.numpy().tobytes()
    except Exception:  # noqa: BLE001 - a torch without NumPy
        return bytes(u.tolist())


def view(s, t, shape):
    """The tensor as the operation sees it: the dense shape, or the strided rows of its storage."""
    stride = int(t.get("row_stride", 0) or 0)
    if stride > 0:
        cols = int(t["row_length"])
        rows = s.numel() // stride
        if [rows, cols] != list(shape):
            raise ValueError("strided rows %d x %d, the contract's shape %s" % (rows, cols, shape))
        return s.as_strided((rows, cols), (stride, 1))
    return s.view(shape)


def run_case(r):
    form = FORMS.get(r["contract"])
    if form is None:
        raise ValueError("no PyTorch form for contract %r (known: %s)" % (r["contract"], ", ".join(sorted(FORMS))))
    axes = {k: int(v) for k, v in r["axes"].items()}
    shape = lambda name: [axes[a] for a in form.shapes[name]]  # noqa: E731
    args = {}
    for name in form.inputs:
        t = r["inputs"][name]
        v = view(storage(t), t, shape(name))
        if form.widen and v.dtype == torch.bfloat16:
            v = v.float()
        args[name] = v
    for k, v in r.get("scalars", {}).items():
        args[k] = float(v)
    out = form.fn(**args)
    outs = out if isinstance(out, (tuple, list)) else [out]
    if len(outs) != len(form.outputs):
        raise ValueError("the form returned %d outputs, expected %d" % (len(outs), len(form.outputs)))
    for o, got in zip(r["outputs"], outs):
        s = storage(o)  # pre-filled with the harness's poison: padding must keep it
        view(s, o, shape(o["name"])).copy_(got.to(DT[o["dtype"]]))
        torch.cuda.synchronize()
        with open(o["file"], "wb") as f:
            f.write(as_bytes(s))


def main():
    if len(sys.argv) != 2:
        reply({"ok": False, "code": "usage", "error": "usage: declared_specials.py REQUEST_JSON"})
        return
    with open(sys.argv[1]) as f:
        req = json.load(f)
    precision = precision_settings()
    results = []
    for r in req["cases"]:
        try:
            run_case(r)
            results.append({"id": r["id"], "contract": r["contract"], "ok": True})
        except BaseException as e:  # noqa: BLE001 - reported per case, named by the test
            results.append({"id": r["id"], "contract": r["contract"], "ok": False,
                            "error": "".join(traceback.format_exception_only(type(e), e)).strip()})
    reply({"ok": True, "torch": torch.__version__, "device": torch.cuda.get_device_name(dev), "precision": precision,
           "forms": {k: v.text for k, v in FORMS.items()}, "cases": results})


main()
