#!/usr/bin/env python3
"""tools/torch/kqual_submission_guard.library_kernels on the CPU (no PyTorch needed): which kernels a
submission launched count as the work handed to a library or to the problem's own reference.
Exits 1 naming the first expectation that does not hold."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "torch"))
import kqual_submission_guard as guard  # noqa: E402

COPY = "void at::native::elementwise_kernel<128, 4, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)>"
WARP = "void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, false, false>(float*, float const*, int, int, int)"
FILL = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >"
ADD = "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>, at::detail::Array<char*, 3> >"
MINE = "transpose_tile_kernel(float const*, float*, int, int)"


def names(found):
    return [(f["kernel"], f["library"]) for f in found]


def expect(what, got, want):
    if got != want:
        print("FAIL: %s\n  got  %r\n  want %r" % (what, got, want))
        sys.exit(1)
    print("ok: %s" % what)


expect("a copy kernel is allowed by default when the reference launches none",
       names(guard.library_kernels([COPY, MINE], [])), [])
expect("a transpose's copy kernel, launched by the reference too, is the reference's work",
       names(guard.library_kernels([COPY], [], [COPY])), [(COPY, "the problem's reference")])
expect("a kernel no library pattern names, launched by the reference, is the reference's work",
       names(guard.library_kernels([WARP, MINE], [], [WARP])), [(WARP, "the problem's reference")])
expect("filling memory stays allowed though the reference fills too",
       names(guard.library_kernels([FILL, MINE], [], [FILL, WARP])), [])
expect("the user's allow-list wins over the reference's kernels",
       names(guard.library_kernels([WARP], ["softmax_warp_forward"], [WARP])), [])
expect("an ATen kernel is a library's work without a reference profile",
       names(guard.library_kernels([ADD, MINE], [])), [(ADD, "ATen")])
expect("the submission's own kernel is never flagged", names(guard.library_kernels([MINE], [], [WARP, COPY])), [])
