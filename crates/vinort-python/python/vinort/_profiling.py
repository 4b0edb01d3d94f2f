"""``SessionOptions.enable_profiling``: a Chrome trace (``chrome://tracing``, Perfetto) of the
session, in onnxruntime's file format: a JSON list of complete events (``"ph": "X"``) with
``cat``, ``name``, ``pid``, ``tid``, ``ts`` and ``dur`` in microseconds from the session's
start. vinort records the session's initialization and every run (``model_run``, with the
partitions it ran: provider and node count); per-kernel events are onnxruntime's own.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import threading
import time


class Profiler:
    def __init__(self, prefix: str):
        self.prefix = prefix
        self.start_ns = time.time_ns()
        self._t0 = time.perf_counter_ns()
        self._events = []
        self._lock = threading.Lock()

    def add(self, name: str, began_ns: int, ended_ns: int, args: dict) -> None:
        event = {
            "cat": "Session",
            "pid": os.getpid(),
            "tid": threading.get_ident(),
            "dur": (ended_ns - began_ns) // 1000,
            "ts": (began_ns - self._t0) // 1000,
            "ph": "X",
            "name": name,
            "args": args,
        }
        with self._lock:
            self._events.append(event)

    def write(self) -> str:
        """Writes the trace as ``<prefix>_<date>_<time>.json`` and returns that name."""
        stamp = datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S_%f")[:-3]
        path = f"{self.prefix}_{stamp}.json"
        with self._lock:
            events = list(self._events)
        with open(path, "w") as f:
            json.dump(events, f)
        return path


@contextlib.contextmanager
def span(profiler, name: str, partitions=None):
    """Records the block as the event ``name`` when ``profiler`` is not None."""
    if profiler is None:
        yield
        return
    began = time.perf_counter_ns()
    try:
        yield
    finally:
        args = {}
        if partitions is not None:
            args["partitions"] = [{"provider": p, "nodes": n} for p, n in partitions]
        profiler.add(name, began, time.perf_counter_ns(), args)
