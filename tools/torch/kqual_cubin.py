"""A candidate's own compiled module, launched from the PyTorch timing worker (the fidelity path).

kqual times a candidate in its own worker (src/worker); the PyTorch baselines are timed here. To show
that the two timing paths measure the same thing, the worker can time the candidate's cubin through
the path the baselines take: the module loaded with the driver API (ctypes over libcuda:
cuModuleLoadData, cuModuleGetFunction), one cuLaunchKernel on torch's current stream with the grid,
block, dynamic shared memory and arguments kqual's launch plan gives (src/check/plan.cpp), on tensors
the worker allocated with torch. Only the simple case: one launch, arguments that are pointers to the
contract's tensors or integers of 4 or 8 bytes.
"""
import ctypes

import torch

CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
_STATIC_SHARED_LIMIT = 48 * 1024  # [bytes] dynamic shared memory a launch gets without opting in

_lib = None


def _cuda():
    global _lib
    if _lib is None:
        _lib = ctypes.CDLL("libcuda.so.1")
        _lib.cuGetErrorName.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        _lib.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 6 + [ctypes.c_uint, ctypes.c_void_p,
                                                                                   ctypes.c_void_p, ctypes.c_void_p]
    return _lib


def _check(rc, what):
    if rc != 0:
        name = ctypes.c_char_p()
        _cuda().cuGetErrorName(rc, ctypes.byref(name))
        raise RuntimeError("%s failed: %s (%d)" % (what, (name.value or b"?").decode(), rc))


class CubinLaunch:
    """One kernel of a module and its launch shape; launch(tensors) enqueues it on torch's current
    stream (so that a CUDA graph capture records it)."""

    def __init__(self, spec):
        for key in ("module", "kernel", "grid", "block", "shared", "args"):
            if key not in spec:
                raise ValueError("cubin request without %r" % key)
        self.grid = [int(v) for v in spec["grid"]]
        self.block = [int(v) for v in spec["block"]]
        self.shared = int(spec["shared"])
        if len(self.grid) != 3 or len(self.block) != 3 or min(self.grid + self.block) < 1 or self.shared < 0:
            raise ValueError("cubin launch: grid %s, block %s, shared %d bytes is not a launch" % (self.grid, self.block, self.shared))
        self.args = spec["args"]
        for a in self.args:
            if "tensor" not in a and not ("value" in a and int(a.get("bytes", 0)) in (4, 8)):
                raise ValueError("cubin argument %r: a {tensor} or a {value, bytes: 4 | 8}" % (a,))
        torch.cuda.init()
        lib = _cuda()
        # The runtime made torch's (primary) context current on this thread; the module lives there.
        ctx = ctypes.c_void_p()
        _check(lib.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
        if not ctx.value:
            raise RuntimeError("no CUDA context is current on the worker's thread after torch.cuda.init()")
        with open(spec["module"], "rb") as f:
            self._image = ctypes.create_string_buffer(f.read())  # kept alive: the driver may read it lazily
        self._module = ctypes.c_void_p()
        _check(lib.cuModuleLoadData(ctypes.byref(self._module), self._image), "cuModuleLoadData(%s)" % spec["module"])
        self._fn = ctypes.c_void_p()
        _check(lib.cuModuleGetFunction(ctypes.byref(self._fn), self._module, spec["kernel"].encode()),
               "cuModuleGetFunction(%s)" % spec["kernel"])
        if self.shared > _STATIC_SHARED_LIMIT:
            _check(lib.cuFuncSetAttribute(self._fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, self.shared),
                   "cuFuncSetAttribute(max dynamic shared %d bytes)" % self.shared)
        self.text = "%s<<<%s, %s, %d>>>" % (spec["kernel"], tuple(self.grid), tuple(self.block), self.shared)

    def bind(self, tensors, outputs):
        """The launch on these tensors (name -> torch tensor): a function of no arguments returning
        the output tensors (names in `outputs`). The argument values and the pointer array are built
        once, outside any timed window."""
        values = []
        for a in self.args:
            if "tensor" in a:
                if a["tensor"] not in tensors:
                    raise ValueError("cubin argument names tensor %r, not one of %s" % (a["tensor"], sorted(tensors)))
                values.append(ctypes.c_void_p(tensors[a["tensor"]].data_ptr()))
            else:
                v = int(a["value"])
                if int(a["bytes"]) == 8:
                    values.append(ctypes.c_int64(v))
                else:
                    values.append(ctypes.c_int32(v) if -2 ** 31 <= v < 2 ** 31 else ctypes.c_uint32(v))
        params = (ctypes.c_void_p * max(1, len(values)))(*[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in values])
        lib, fn, g, b, shared = _cuda(), self._fn, self.grid, self.block, self.shared
        param_ptr = ctypes.cast(params, ctypes.c_void_p)
        outs = [tensors[n] for n in outputs]

        def launch():
            stream = torch.cuda.current_stream().cuda_stream
            _check(lib.cuLaunchKernel(fn, g[0], g[1], g[2], b[0], b[1], b[2], shared, stream, param_ptr, None), "cuLaunchKernel")
            return outs

        launch.keep = (values, params)  # the pointers in params point into values: both live as long as launch
        return launch
