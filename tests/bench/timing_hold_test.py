#!/usr/bin/env python3
"""tools/torch/kqual_torch_timing.sample without PyTorch (a stand-in torch module): where the CUDA events
are the measure, every sample's flush is enqueued behind a spin that holds the stream (so the host's
enqueue of the flush, the events and the replay never reaches into the window); where kqual's recorder
times the samples from the activity record, nothing is held; a torch without torch.cuda._sleep still
samples, and the reply says the stream was not held."""
import os
import sys
import types

log = []


class Event:
    def __init__(self, enable_timing=False, external=False):
        pass

    def record(self):
        log.append("event")

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return 0.004


def fake_torch(with_sleep):
    cuda = types.SimpleNamespace(Event=Event, synchronize=lambda: None,
                                 current_stream=lambda: types.SimpleNamespace(cuda_stream=7))
    if with_sleep:
        cuda._sleep = lambda cycles: log.append("hold %d" % cycles)
    return types.SimpleNamespace(cuda=cuda)


def load(with_sleep):
    sys.modules["torch"] = fake_torch(with_sleep)
    sys.modules.pop("kqual_torch_timing", None)
    import kqual_torch_timing
    return kqual_torch_timing


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from py_check import done, expect  # noqa: E402


class Recorder:
    def mark(self, label, stream):
        log.append("mark " + label)


def run_samples(timing, recorder=None):
    del log[:]
    res = {"warmup_ms": [], "samples_ms": [], "datasets": []}
    runs = [lambda: log.append("run A"), lambda: log.append("run B")]
    clocks = types.SimpleNamespace(nvml=None)
    timing.sample(runs, {"warmup": 1, "samples": 2, "flush": "write", "clock_guard": False}, res, clocks,
                  lambda mode: log.append("flush " + mode), prepare=lambda d, attempt: log.append("prepare %d" % d),
                  recorder=recorder)
    return res


timing = load(True)
res = run_samples(timing)
hold = "hold %d" % timing.HOLD_CYCLES
expect("events: the stream held before every flush, warm-up included", log,
       ["prepare 0", hold, "flush write", "event", "run A", "event",
        "prepare 0", hold, "flush write", "event", "run A", "event",
        "prepare 1", hold, "flush write", "event", "run B", "event"])
expect("events: samples kept", res["samples_ms"], [0.004, 0.004])
expect("events: no note", res.get("notes", []), [])

run_samples(timing, Recorder())
expect("recorder: nothing held", [e for e in log if e.startswith("hold")], [])
expect("recorder: marks around the timed calls", [e for e in log if e.startswith("mark")], ["mark t1", "mark /t1", "mark t2", "mark /t2"])

timing = load(False)
res = run_samples(timing)
expect("no _sleep: nothing held", [e for e in log if e.startswith("hold")], [])
expect("no _sleep: the reply says so", res.get("notes"), ["torch.cuda._sleep is missing: the stream was not held before each sample"])
expect("no _sleep: samples still taken", len(res["samples_ms"]), 2)

done()
