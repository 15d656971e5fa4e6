#!/usr/bin/env python3
"""tools/torch/kqual_scaledown on the CPU (no PyTorch needed): the sizes kernelbench_capture.py runs a
KernelBench problem at, scaled down to a cap and grown back where the forward refuses them. The
forwards here are stand-ins that refuse what the real ones refused on the H200 (docs/import-coverage.md).
Exits 1 naming the first expectation that does not hold."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "torch"))
import kqual_scaledown as sd  # noqa: E402


def expect(what, got, want):
    if got != want:
        print("FAIL: %s\n  got  %r\n  want %r" % (what, got, want))
        sys.exit(1)
    print("ok: %s" % what)


def product(sz):
    n = 1
    for v in sz.values():
        n *= v
    return n


# A 2-D convolution: the output's width moves with both width and kernel_size; the batch moves alone.
movers = {("out", 3): {"width", "kernel_size"}, ("x", 3): {"width"}, ("w", 3): {"kernel_size"}, ("x", 0): {"batch_size"},
          ("out", 0): {"batch_size"}, ("pool", 2): {"height"}}
expect("the constants moving a dim another constant moves too, or one moved non-linearly, are held",
       sd.constants_to_hold(movers, {("out", 3), ("pool", 2)}), {"width", "kernel_size", "height"})
expect("nothing is held where every dim moves with one constant", sd.constants_to_hold(movers, set()), set())

# A 3-D transposed convolution, x [batch, channels, depth, height, width]: the input is the largest tensor.
values = {"batch_size": 16, "in_channels": 32, "depth": 16, "height": 32, "width": 32}
mins = {c: 1 for c in values}
small = sd.shrink(values, mins, product, 1 << 16)
expect("shrinking halves the largest constant until the cap holds", product(small) <= 1 << 16, True)
expect("shrinking stops at each constant's minimum", all(small[c] >= mins[c] for c in small), True)
expect("nothing to shrink when the module fits", sd.shrink({"n": 8}, {"n": 1}, product, 1 << 16), {"n": 8})


def conv_transpose(sz):  # refuses an input smaller than 4 along any spatial axis (its output would be empty)
    bad = [a for a in ("depth", "height", "width") if sz[a] < 4]
    return "Output size is too small along %s" % bad if bad else None


tiny = {"batch_size": 1, "in_channels": 1, "depth": 1, "height": 1, "width": 1}
runs_seen = []


def counted(sz):
    runs_seen.append(dict(sz))
    return conv_transpose(sz)


sizes, err, runs, tried = sd.back_off(tiny, values, product, 1 << 22, counted)
expect("a convolution refused at 1 x 1 x 1 runs once its spatial axes are grown", err, None)
expect("... at the first sizes that work", [sizes[a] for a in ("depth", "height", "width")], [4, 4, 4])
expect("... every attempt counted", runs, len(runs_seen))
expect("... the batch and channels are not grown needlessly past the spatial axes",
       sizes["batch_size"] <= 4 and sizes["in_channels"] <= 4, True)


def stride_padding(sz):  # an output padding of 1 needs a stride above 1: the halved stride is refused
    return None if sz["stride"] >= 2 else "output padding must be smaller than either stride or dilation"


sizes, err, runs, _ = sd.back_off({"stride": 1, "batch_size": 1, "length": 8}, {"stride": 2, "batch_size": 64, "length": 4096},
                                  product, 1 << 22, stride_padding)
expect("a stride halved below the output padding is restored, the most shrunk constant tried first but not kept",
       (err, sizes["stride"], sizes["batch_size"], sizes["length"]), (None, 2, 1, 8))


def batch_norm(sz):  # training mode needs more than one value per channel
    return None if sz["batch_size"] * sz["height"] * sz["width"] > 1 else "Expected more than 1 value per channel when training"


sizes, err, _, _ = sd.back_off({"batch_size": 1, "height": 1, "width": 1}, {"batch_size": 10, "height": 224, "width": 224},
                               product, 1 << 22, batch_norm)
expect("one value per channel: one constant doubled is enough", (err, product(sizes)), (None, 2))

first = "RuntimeError: always"
sizes, err, runs, tried = sd.back_off({"a": 1, "b": 1}, {"a": 64, "b": 64}, product, 256, lambda sz: first)
expect("a forward that never runs reports the first error", err, first)
expect("... never past the cap", all(product(t) <= 256 for t in tried), True)
expect("... nor past the module's values", all(t["a"] <= 64 and t["b"] <= 64 for t in tried), True)
sizes, err, runs, _ = sd.back_off({"a": 1}, {"a": 1 << 30}, product, 1 << 40, lambda sz: "no", max_runs=7)
expect("at most max_runs attempts", (runs <= 7, err), (True, "no"))
sizes, err, runs, _ = sd.back_off({"a": 4}, {"a": 4}, product, 1 << 20, lambda sz: "no")
expect("nothing was shrunk: one attempt, its error", (runs, err), (1, "no"))
