"""What kqual's submission worker (submission_worker.py) watches around a PyTorch submission: the
functions a timing or synchronisation cheat replaces, the CUDA streams it creates (spun, so that
unjoined work shows), and the threads it leaves running. Early, cheap signals only: the verdict's
evidence of streams, late work and who did the work is kqual's activity record (src/bench/record_judge.cpp).

The submission runs in this interpreter (its Python and host code cannot run anywhere else), so
everything here is a check a determined submission could defeat from inside; each is stated in the
memo with that limit. The checks are made against originals captured before the submission is
imported.
"""
import importlib
import threading

# Dotted names a timing, synchronisation or verification cheat replaces. Captured before the
# submission is imported, compared by identity after its import and after every call.
WATCHED = (
    "time.perf_counter", "time.perf_counter_ns", "time.time", "time.monotonic", "time.monotonic_ns",
    "torch.cuda.synchronize", "torch.cuda.Event", "torch.cuda.Event.record", "torch.cuda.Event.elapsed_time",
    "torch.cuda.Event.synchronize", "torch.cuda.Event.query", "torch.cuda.Stream.synchronize",
    "torch.cuda.Stream.wait_stream", "torch.cuda.current_stream", "torch.cuda.stream",
    "torch.Tensor.cpu", "torch.Tensor.to", "torch.Tensor.copy_", "torch.Tensor.clone", "torch.equal", "torch.allclose",
    "torch.profiler.profile", "numpy.ndarray.tofile", "hashlib.blake2b",
)


def resolve(dotted):
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for p in parts[i:]:
            obj = getattr(obj, p)
        return obj
    raise ImportError(dotted)


class Originals:
    """The watched objects as they were before the submission ran."""

    def __init__(self):
        self.saved = {}
        for name in WATCHED:
            try:
                self.saved[name] = resolve(name)
            except (ImportError, AttributeError):
                pass  # not in this torch: nothing to watch

    def replaced(self):
        """The watched names that no longer resolve to the original object."""
        out = []
        for name, obj in self.saved.items():
            try:
                now = resolve(name)
            except (ImportError, AttributeError):
                out.append(name + " (deleted)")
                continue
            if now is not obj:
                out.append(name)
        return out


class StreamTracker:
    """Every torch.cuda.Stream made after install(): a subclass registered in torch.cuda, so a
    submission's side streams can be asked whether they still hold work and can be joined to the
    caller's stream before a timing event is recorded.

    While armed (a checked call), every side stream starts with a spin (torch.cuda._sleep) twice as
    long as the one on the caller's stream: a stream made during the call gets it when it is made,
    one made earlier just before the call. Work the call leaves on a side stream then cannot finish
    before the caller's stream does unless the caller's stream waits for it: the check does not
    depend on how short the side work is."""

    def __init__(self, torch):
        self.torch = torch
        self.streams = {}  # the CUDA stream handle -> a Stream object of it
        self.armed = 0     # cycles a new stream starts with; 0: not armed
        base = torch.cuda.Stream
        tracker = self

        class TrackedStream(base):
            def __new__(cls, *a, **kw):
                s = super().__new__(cls, *a, **kw)
                if s.cuda_stream not in tracker.streams:
                    tracker.streams[s.cuda_stream] = s
                    if tracker.armed and s.cuda_stream != 0:
                        tracker.spin(s, tracker.armed)
                return s

        TrackedStream.__name__ = TrackedStream.__qualname__ = "Stream"
        TrackedStream.__module__ = base.__module__
        self.cls = TrackedStream
        self.base = base

    def install(self):
        # torch.cuda's own functions (current_stream) make Stream objects through this name too:
        # they are registered like the submission's, by handle, and the caller's is left out below.
        self.torch.cuda.Stream = self.cls

    def spin(self, s, cycles):
        with self.torch.cuda.stream(s):
            self.torch.cuda._sleep(cycles)

    def arm(self, caller, cycles):
        """Spin every known side stream now, and every stream made until disarm() when it is made."""
        for h, s in list(self.streams.items()):
            if h != caller.cuda_stream and h != 0:
                self.spin(s, cycles)
        self.armed = cycles

    def disarm(self):
        self.armed = 0

    def pending(self, caller):
        """The tracked streams, other than the caller's, with work not finished."""
        return [s for h, s in self.streams.items() if h != caller.cuda_stream and not s.query()]

    def join(self, caller):
        """Make the caller's stream wait for every tracked stream (timing: a side stream's work inside the window)."""
        for h, s in self.streams.items():
            if h != caller.cuda_stream:
                caller.wait_stream(s)


def live_threads():
    return {t.ident for t in threading.enumerate() if t.is_alive()}
