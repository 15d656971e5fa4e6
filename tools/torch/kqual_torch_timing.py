"""The timing rules of kqual's PyTorch worker, as kqual's own worker keeps them (src/bench/timing.cpp):

  - the timed window: one replay of a CUDA graph that holds the operation's kernels only (captured
    once per shape and dataset, inputs and outputs static), timed by two CUDA events recorded inside
    the graph around the kernels (external events; where torch cannot record them, events on the
    stream around the replay): no Python dispatch, no output allocation, no host work, and not the
    graph launch itself in the window;
  - the stream held busy before every sample's flush (a spin, torch.cuda._sleep) where the events are
    the measure: Python enqueues the flush, the events and the replay more slowly than the GPU runs a
    100 MB flush, so without the hold the GPU reached the graph while its launch was still being
    submitted, and part of that submission fell inside the window (+0.15-0.4 us around a 4.4 us
    kernel on an H100; bench/torch-window-probe.py, docs/gpu-runs.md). kqual's own worker enqueues
    from C++ inside the flush's time. Where kqual's recorder times the samples from the activity
    record (the kernels' own GPU start and end), host gaps are not in the measure and nothing is held;
  - L2 flush before every sample, outside the events: "write" overwrites a 2x-L2 buffer, "clean" then
    reads it back so its dirty lines are written back before the timed window, "none" keeps L2 warm
    ("invalidate", PTX discard.global.L2, has no PyTorch equivalent: refused by the worker);
  - warm-up samples excluded and reported; samples alternate between the two datasets;
  - clock guard through pynvml where it is importable: the SM clock read after each sample, a sample
    below 90 % of the default clock or under a power/thermal slowdown discarded (the worker backs off
    50 ms); without pynvml the clocks are not read, and the reply says so;
  - the same call without a graph ("direct": dispatch, allocation where the op allocates, launch) is
    timed in the same way, apart, so that the Python overhead is a number of its own and never part
    of a baseline's samples.
"""
import os
import time

import torch

# Bound when this module is imported, before any submission is (submission_worker.py imports it
# first): a submission that replaces torch.cuda.Event or torch.cuda.synchronize later does not time itself.
Event = torch.cuda.Event
synchronize = torch.cuda.synchronize
perf_counter = time.perf_counter
sleep_cycles = getattr(torch.cuda, "_sleep", None)  # the stream hold (holder()); None where this torch has none


class Recorder:
    """kqual's native recorder (libkqual_record.so), loaded by the driver inside cuInit through
    CUDA_INJECTION64_PATH before the submission's code: marks around each call and a flush at the end
    of each request. What it records is judged by kqual, not by this worker (docs/torch-submissions.md)."""

    def __init__(self):
        import ctypes
        self.lib = None
        self.note = "kqual started this worker without its recorder (KQUAL_RECORD_LIB unset)"
        if os.environ.get("KQUAL_RECORD_LIB", ""):
            try:
                lib = ctypes.CDLL(os.environ.get("KQUAL_RECORD_LIB", ""), mode=getattr(os, "RTLD_NOLOAD", 4))
                if lib.kqual_record_active():
                    self.lib, self.note = lib, ""
                else:
                    self.note = "the recorder was loaded but is not recording (see the record's E lines)"
            except OSError as e:
                self.note = "the recorder was not loaded by the driver: %s" % e
        self._mark = self.lib.kqual_record_mark if self.lib else None
        self._flush = self.lib.kqual_record_flush if self.lib else None
        self._read = self.lib.kqual_record_read if self.lib else None
        self._draw = self.lib.kqual_record_draw if self.lib else None
        self._upload = self.lib.kqual_record_upload if self.lib else None
        if self._draw:
            self._draw.restype = ctypes.c_ulonglong
        self._ull = ctypes.c_ulonglong

    def mark(self, label, stream):
        if self._mark:
            self._mark(label.encode(), self._ull(stream.cuda_stream))

    def read(self, label, t):
        """The recorder reads tensor t's memory itself (dense, the device synchronised) and writes its code
        under label: kqual checks the bytes this worker wrote for the same label against it."""
        if self._read:
            self._read(label.encode(), self._ull(t.data_ptr()), self._ull(t.numel() * t.element_size()))

    def upload(self, label, t, path):
        """The recorder copies kqual's file `path` into tensor t's memory itself (t dense, the device
        synchronised) and writes the bytes' code under label ('U'): kqual checks it against its own dataset,
        and any other copy from the host between the calls is not the harness's. False where it could not
        (the file not of t's size, unreadable, the driver's error); None without the recorder."""
        if not self._upload:
            return None
        return bool(self._upload(label.encode(), self._ull(t.data_ptr()), str(path).encode(),
                                 self._ull(t.numel() * t.element_size())))

    def draw(self, label):
        """A number from the recorder that no one in this process can know before asking (the keyed code of
        label; the record says when it was asked, and kqual recomputes it). Without the recorder: os.urandom
        (kqual then has no record and times nothing)."""
        if self._draw:
            return int(self._draw(label.encode()))
        return int.from_bytes(os.urandom(8), "little")

    def flush(self, token):
        if self._flush:
            self._flush(str(token).encode())



def exc_text(e):
    import traceback
    return "".join(traceback.format_exception_only(type(e), e)).strip()


class Clocks:
    """The SM clock guard (pynvml), or a note saying why clocks are not read."""

    def __init__(self, props):
        self.nvml = None
        self.note = ""
        try:
            import pynvml
            pynvml.nvmlInit()
            handle = None
            uuid = getattr(props, "uuid", None)
            if uuid is not None:
                try:
                    handle = pynvml.nvmlDeviceGetHandleByUUID(("GPU-" + str(uuid)).encode())
                except Exception:
                    handle = None
            if handle is None:
                handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
            try:
                ref_mhz = pynvml.nvmlDeviceGetDefaultApplicationsClock(handle, pynvml.NVML_CLOCK_SM)
            except Exception:
                ref_mhz = pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM)
            slow_mask = 0
            for name, bit in (("nvmlClocksThrottleReasonSwPowerCap", 0x4), ("nvmlClocksThrottleReasonHwSlowdown", 0x8),
                              ("nvmlClocksThrottleReasonSwThermalSlowdown", 0x20),
                              ("nvmlClocksThrottleReasonHwThermalSlowdown", 0x40),
                              ("nvmlClocksThrottleReasonHwPowerBrakeSlowdown", 0x80)):
                slow_mask |= getattr(pynvml, name, bit)
            self.nvml = (pynvml, handle, ref_mhz, slow_mask)
        except Exception as e:
            self.note = "clocks not read: pynvml %s (%s)" % ("not importable" if isinstance(e, ImportError) else "failed", exc_text(e))

    def reference_mhz(self):
        return self.nvml[2] if self.nvml else 0

    def check(self):
        """(sm MHz, mem MHz, why the sample must be discarded or None, temperature C)."""
        pynvml, h, ref, mask = self.nvml
        sm = pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)
        mem = pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM)
        try:
            reasons = pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(h) & mask
        except Exception:
            reasons = 0
        try:
            temp = pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU)
        except Exception:
            temp = 0
        bad = None
        if sm < 0.9 * ref:
            bad = "SM clock %d MHz below 90 %% of %d MHz" % (sm, ref)
        elif reasons:
            bad = "slowdown reasons 0x%x" % reasons
        return sm, mem, bad, temp


class Flusher:
    """The L2 flush before a sample (outside the events)."""

    def __init__(self, dev, l2_bytes):
        self.buf = torch.empty(2 * l2_bytes, dtype=torch.uint8, device=dev)
        self.k = 0

    def __call__(self, mode):
        if mode == "none":
            return
        self.k += 1
        self.buf.fill_(self.k & 0xFF)
        if mode == "clean":
            torch.sum(self.buf.view(torch.int32), dtype=torch.int64)


def capture_graph(call):
    """One CUDA graph of call(), the tensors it returned (static: every replay rewrites them) and the
    pair of timing events recorded inside it around the call (None where this torch cannot record
    them in a graph). Warmed up on a side stream first (lazy initialisation, library workspaces,
    Inductor's first run), as torch.cuda.graph requires. Raises where the call cannot be captured
    (host syncs, CPU tensors, data-dependent control flow)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            call()
    torch.cuda.current_stream().wait_stream(side)
    synchronize()
    try:
        # External events become event-record nodes of the graph: their interval holds the call's
        # kernels and not the graph launch itself (~0.2 us on an H200, 5 % of a 4 us kernel).
        events = (Event(enable_timing=True, external=True), Event(enable_timing=True, external=True))
    except TypeError:
        events = None
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        if events:
            events[0].record()
        outs = call()
        if events:
            events[1].record()
    synchronize()
    return g, outs, events


def median(v):
    s = sorted(v)
    n = len(s)
    if n == 0:
        return None
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def timed(run, start, end, marks=None):
    """One sample of run() in ms: the events it recorded inside its graph when it returns them, else
    the events around it. marks: (recorder, label): the recorder's marks label and "/"label around run(),
    so that kqual reads the sample's GPU work from the record."""
    start.record()
    if marks:
        marks[0].mark(marks[1], torch.cuda.current_stream())
    inner = run()
    if marks:
        marks[0].mark("/" + marks[1], torch.cuda.current_stream())
    end.record()
    end.synchronize()
    return inner[0].elapsed_time(inner[1]) if inner else start.elapsed_time(end)


# [SM cycles] the spin before a sample's flush: ~100 us at 2 GHz, past the ~30 us Python takes to
# enqueue the flush, the events and the replay.
HOLD_CYCLES = 200000


def holder():
    """A function that holds torch's current stream busy for HOLD_CYCLES (None where this torch has no
    torch.cuda._sleep: the samples are then taken without the hold)."""
    spin = sleep_cycles
    return (lambda: spin(HOLD_CYCLES)) if spin else None


def sample(runs, r, res, clocks, flush, prepare=None, recorder=None, after=None):
    """Warm-up then samples of runs[d]() (d the dataset, alternating), each timed by timed() after an
    L2 flush; kept samples, their clocks and the discarded ones go into res. prepare(d, attempt), when
    given, runs before the flush (outside the window): a submission's dataset copied into its static
    inputs (attempt None for a warm-up call, else the sample's id). after(attempt, kept), when given,
    runs once the sample's call is done and timed (kept: how many samples were kept before it): the
    submission's fresh-value draw and read-back. recorder: kqual's recorder, which marks each sample
    t<attempt> (res["sample_ids"]: the attempt of each kept sample) for kqual to time it from the
    activity record."""
    mode, guard = r.get("flush", "write"), r.get("clock_guard", True) and clocks.nvml is not None
    start, end = Event(enable_timing=True), Event(enable_timing=True)
    hold = None if recorder else holder()
    unheld = "torch.cuda._sleep is missing: the stream was not held before each sample"
    if not recorder and not hold and unheld not in res.setdefault("notes", []):
        res["notes"].append(unheld)
    for i in range(int(r["warmup"])):
        if prepare:
            prepare(i % 2, None)
        if hold:
            hold()
        flush(mode)
        res["warmup_ms"].append(timed(runs[i % 2], start, end))
    want, attempts = int(r["samples"]), 0
    while len(res["samples_ms"]) < want:
        d = attempts % 2
        attempts += 1
        if prepare:
            prepare(d, attempts)
        if hold:
            hold()
        flush(mode)
        ms = timed(runs[d], start, end, (recorder, "t%d" % attempts) if recorder else None)
        checked = clocks.check() if guard else None
        if after:
            after(attempts, len(res["samples_ms"]))
        if guard:
            sm, mem, bad, temp = checked
            res["max_temperature_c"] = max(res["max_temperature_c"], temp)
            if bad and not res["guard_exhausted"]:
                res["discarded"] += 1
                if len(res["clock_events"]) < 20:
                    res["clock_events"].append("sample %d discarded: %s" % (attempts, bad))
                if res["discarded"] >= 3 * want:
                    res["guard_exhausted"] = True
                time.sleep(0.05)
                continue
            res["sm_mhz"].append(sm)
            res["mem_mhz"].append(mem)
        res["samples_ms"].append(ms)
        res["datasets"].append(d)
        res.setdefault("sample_ids", []).append(attempts)


def overhead(direct, graphs, r, flush, count):
    """The Python overhead of one call, apart from the samples: the direct call (dispatch, allocation
    where the op allocates, launch) and the graph replay, each timed with events after the same flush
    and on the host clock (the time the call takes to return, nothing synchronised). Returns the
    fields of the reply."""
    mode = r.get("flush", "write")
    start, end = Event(enable_timing=True), Event(enable_timing=True)
    out = {"direct_ms": [], "graph_ms": [], "direct_host_us": [], "replay_host_us": []}
    for i in range(2 * count + 2):
        d = i % 2
        for name, run in (("direct", direct[d]), ("graph", graphs[d])):
            flush(mode)
            start.record()
            t0 = perf_counter()
            inner = run() if name == "graph" else None
            if name == "direct":
                run()
            t1 = perf_counter()
            end.record()
            end.synchronize()
            if i < 2:
                continue  # the first pair (one per dataset) warms the direct path up: not counted
            out[name + "_ms"].append(inner[0].elapsed_time(inner[1]) if inner else start.elapsed_time(end))
            out[("direct" if name == "direct" else "replay") + "_host_us"].append((t1 - t0) * 1e6)
    out["overhead_ms"] = median(out["direct_ms"]) - median(out["graph_ms"])
    out["overhead_host_us"] = median(out["direct_host_us"]) - median(out["replay_host_us"])
    return out
