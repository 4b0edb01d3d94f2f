"""onnxruntime's Python API on vinort: each call made on both runtimes must give the same result,
or an exception of the same class (onnxruntime's own classes by name under
``capi.onnxruntime_pybind11_state``; Python's built-in ones as themselves), and warn where
onnxruntime warns. onnxruntime's behaviour is the expected value here, never vinort's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import warnings

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import vinort
from vinort.capi import onnxruntime_pybind11_state as vinort_state

# --- the model: two inputs summed, a Cast of a symbolic-length int32 input ---------------------


def small_model() -> bytes:
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "y"], ["z"], name="add"),
         helper.make_node("Cast", ["i"], ["j"], to=TensorProto.INT64, name="cast")],
        "small",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("i", TensorProto.INT32, ["n"])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("j", TensorProto.INT64, ["n"])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8,
                              producer_name="surface", model_version=4)
    helper.set_model_props(model, {"k": "v"})
    return model.SerializeToString()


MODEL = small_model()
X = np.array([1.0, 2.5], np.float32)
I = np.arange(3, dtype=np.int32)
FEED = {"x": X, "y": X, "i": I}
CPU = ["CPUExecutionProvider"]


# --- comparing outcomes -----------------------------------------------------------------------


def outcome(module, call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = ("ok", call(module))
        except Exception as e:  # compared below
            result = ("error", e)
    return result, [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def same_value(want, got, where="result"):
    if isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray), f"{where}: {type(got)}"
        assert got.dtype == want.dtype and got.shape == want.shape, f"{where}: {got.dtype}{got.shape}"
        np.testing.assert_array_equal(got, want, err_msg=where)
    elif isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want), f"{where}: {got!r} vs {want!r}"
        for k, (w, g) in enumerate(zip(want, got)):
            same_value(w, g, f"{where}[{k}]")
    elif isinstance(want, dict):
        assert isinstance(got, dict) and set(got) == set(want), f"{where}: {got!r} vs {want!r}"
        for k in want:
            same_value(want[k], got[k], f"{where}[{k!r}]")
    elif type(want).__name__ == "OrtValue":
        same_value(want.numpy(), got.numpy(), f"{where}.numpy()")
    elif hasattr(want, "name") and hasattr(want, "shape") and hasattr(want, "type"):  # NodeArg
        assert (got.name, got.shape, got.type) == (want.name, want.shape, want.type), where
    elif hasattr(type(want), "__members__"):  # onnxruntime's enums
        assert (int(got), got.name) == (int(want), want.name), f"{where}: {got!r} vs {want!r}"
    else:
        assert got == want, f"{where}: {got!r} vs onnxruntime's {want!r}"


def same(call, compare=same_value):
    """Makes ``call(module)`` on onnxruntime and on vinort and checks they agree."""
    (want, want_warn), (got, got_warn) = outcome(ort, call), outcome(vinort, call)
    if want[0] == "error":
        cls = type(want[1])
        assert got[0] == "error", f"onnxruntime raised {cls.__name__}: {want[1]}; vinort returned {got[1]!r}"
        if cls.__module__.endswith("onnxruntime_pybind11_state"):
            expected = getattr(vinort_state, cls.__name__)
        else:
            expected = cls
        assert isinstance(got[1], expected), (
            f"onnxruntime raised {cls.__name__} ({want[1]}), vinort {type(got[1]).__name__} ({got[1]})")
    else:
        assert got[0] == "ok", f"onnxruntime returned {want[1]!r}; vinort raised {type(got[1]).__name__}: {got[1]}"
        compare(want[1], got[1])
    assert bool(got_warn) == bool(want_warn), f"warnings: onnxruntime {want_warn}, vinort {got_warn}"
    return got


def session(m, providers=CPU, **kw):
    return m.InferenceSession(MODEL, providers=providers, **kw)


# --- module functions -------------------------------------------------------------------------


@pytest.mark.parametrize("call", [
    lambda m: m.get_all_providers(),
    lambda m: m.get_device(),
    lambda m: "CPUExecutionProvider" in m.get_available_providers(),
    lambda m: m.set_default_logger_severity(3),
    lambda m: m.set_default_logger_severity(7),
    lambda m: m.set_default_logger_verbosity(1),
    lambda m: m.disable_telemetry_events(),
    lambda m: m.enable_telemetry_events(),
    lambda m: m.set_seed(5),
    lambda m: isinstance(m.get_version_string(), str),
    lambda m: isinstance(m.get_build_info(), str),
    lambda m: [(e.name, int(e)) for e in m.ExecutionMode.__members__.values()],
    lambda m: [(e.name, int(e)) for e in m.ExecutionOrder.__members__.values()],
    lambda m: [(e.name, int(e)) for e in m.GraphOptimizationLevel.__members__.values()],
], ids=lambda c: None)
def test_module_functions(call):
    same(call)


def test_the_capi_modules_have_onnxruntime_s_exception_classes():
    for name in ["Fail", "InvalidArgument", "NoSuchFile", "NoModel", "EngineError", "RuntimeException",
                 "InvalidProtobuf", "ModelLoaded", "NotImplemented", "InvalidGraph", "EPFail"]:
        assert isinstance(getattr(ort.capi.onnxruntime_pybind11_state, name), type), name
        cls = getattr(vinort_state, name)
        assert issubclass(cls, Exception), name
        assert getattr(vinort.capi._pybind_state, name) is cls is getattr(vinort, name)
    from vinort.capi import _pybind_state as C
    assert C.get_available_providers() == vinort.get_available_providers()
    from vinort.capi.onnxruntime_inference_collection import InferenceSession, OrtValue
    assert InferenceSession is vinort.InferenceSession and OrtValue is vinort.OrtValue
    # vinort's finer classes are onnxruntime's underneath.
    assert issubclass(vinort.UnsupportedNodes, vinort.NotImplemented)
    assert issubclass(vinort.RunCancelled, vinort.Fail)
    assert issubclass(vinort.ProviderError, vinort.EPFail)


# --- SessionOptions and RunOptions ------------------------------------------------------------

SESSION_OPTION_ATTRIBUTES = [
    "intra_op_num_threads", "inter_op_num_threads", "graph_optimization_level", "execution_mode",
    "execution_order", "enable_profiling", "profile_file_prefix", "optimized_model_filepath",
    "enable_cpu_mem_arena", "enable_mem_pattern", "enable_mem_reuse", "use_deterministic_compute",
    "use_per_session_threads", "log_severity_level", "log_verbosity_level", "logid",
]


@pytest.mark.parametrize("attribute", SESSION_OPTION_ATTRIBUTES)
def test_session_option_defaults(attribute):
    same(lambda m: getattr(m.SessionOptions(), attribute))


def set_option(m, name, value):
    so = m.SessionOptions()
    setattr(so, name, value(m) if callable(value) else value)
    return getattr(so, name)


@pytest.mark.parametrize("name,value", [
    ("intra_op_num_threads", 3), ("intra_op_num_threads", "3"), ("inter_op_num_threads", 2),
    ("graph_optimization_level", lambda m: m.GraphOptimizationLevel.ORT_ENABLE_BASIC),
    ("graph_optimization_level", 1), ("execution_mode", lambda m: m.ExecutionMode.ORT_PARALLEL),
    ("execution_mode", 1), ("enable_profiling", True), ("logid", "abc"), ("logid", 3),
    ("log_severity_level", 3), ("no_such_attribute", 1),
])
def test_session_option_assignment(name, value):
    same(lambda m: set_option(m, name, value))


@pytest.mark.parametrize("call", [
    lambda m: m.SessionOptions().get_session_config_entry("nope"),
    lambda m: m.SessionOptions().add_session_config_entry("a.b", 1),
    lambda m: m.SessionOptions().register_custom_ops_library("/nonexistent/libcustom.so"),
    lambda m: m.SessionOptions().add_free_dimension_override_by_name("n", 3),
])
def test_session_option_methods(call):
    same(call)


def test_session_config_entries_round_trip():
    def call(m):
        so = m.SessionOptions()
        so.add_session_config_entry("session.some_key", "1")
        return so.get_session_config_entry("session.some_key")
    same(call)


@pytest.mark.parametrize("call", [
    lambda m: [getattr(m.RunOptions(), a) for a in
               ["log_severity_level", "log_verbosity_level", "logid", "only_execute_path_to_fetches", "terminate"]],
    lambda m: m.RunOptions().get_run_config_entry("x"),
    lambda m: setattr(m.RunOptions(), "no_such_attribute", 1),
])
def test_run_options(call):
    same(call)


def test_run_config_entries_round_trip():
    def call(m):
        ro = m.RunOptions()
        ro.add_run_config_entry("k", "v")
        ro.logid = "tag"
        return ro.get_run_config_entry("k"), ro.logid
    same(call)


def test_a_terminated_run_is_a_fail():
    def call(m):
        ro = m.RunOptions()
        ro.terminate = True
        return session(m).run(None, FEED, ro)
    same(call)


# --- creating a session -----------------------------------------------------------------------


@pytest.mark.parametrize("call", [
    lambda m: m.InferenceSession(MODEL, providers=CPU).get_providers(),
    lambda m: m.InferenceSession(42),
    lambda m: m.InferenceSession(bytearray(MODEL)),
    lambda m: m.InferenceSession("/nonexistent/model.onnx"),
    lambda m: m.InferenceSession(b"this is not an onnx model"),
    lambda m: session(m, ["CUDAExecutionProvider", "CPUExecutionProvider"]).get_providers(),
    lambda m: session(m, ["CUDAExecutionProvider"]).get_providers(),
    lambda m: session(m, ["TensorrtExecutionProvider", "CUDAExecutionProvider"]).get_providers(),
    lambda m: session(m, ["CPUExecutionProvider", "CPUExecutionProvider"]).get_providers(),
    lambda m: session(m, []).get_providers(),
    lambda m: session(m, "CPUExecutionProvider").get_providers(),  # a str is a sequence of names
    lambda m: session(m, [("CPUExecutionProvider", {"arena_extend_strategy": "kSameAsRequested"})]).get_providers(),
    lambda m: session(m, [("CPUExecutionProvider", {"arena_extend_strategy": "kSameAsRequested"})])
    .get_provider_options(),
    lambda m: session(m, CPU, provider_options=[{}, {}]).get_providers(),
    lambda m: session(m, [("CPUExecutionProvider", {})], provider_options=[{}]).get_providers(),
    lambda m: session(m, [("CPUExecutionProvider", "not a dict")]).get_providers(),
    lambda m: session(m, CPU).get_session_options().intra_op_num_threads,
    lambda m: [(a.name, a.shape, a.type) for a in session(m).get_inputs()],
    lambda m: [(a.name, a.shape, a.type) for a in session(m).get_outputs()],
    lambda m: session(m).get_overridable_initializers(),
    lambda m: {k: getattr(session(m).get_modelmeta(), k) for k in
               ["producer_name", "graph_name", "domain", "description", "graph_description", "version",
                "custom_metadata_map"]},
], ids=lambda c: None)
def test_creating_sessions(call):
    same(call)


@pytest.mark.parametrize("call", [
    lambda m: session(m, CPU, provider_options=[{}, {}], enable_fallback=0),
    lambda m: session(m, [("CPUExecutionProvider", {})], provider_options=[{}], enable_fallback=0),
    lambda m: session(m, [("CPUExecutionProvider", "not a dict")], enable_fallback=0),
    lambda m: session(m, 5, enable_fallback=0),
], ids=lambda c: None)
def test_provider_argument_mistakes_without_fallback(call):
    same(call)


def test_negative_thread_counts_mean_the_default():
    def call(m):
        so = m.SessionOptions()
        so.intra_op_num_threads = -1
        return m.InferenceSession(MODEL, so, providers=CPU).run(None, FEED)
    same(call)


def test_an_onnxruntime_session_options_object_is_read():
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = vinort.InferenceSession(MODEL, so, providers=CPU)
    same_value(ort.InferenceSession(MODEL, so, providers=CPU).run(None, FEED), sess.run(None, FEED))


def test_set_providers_builds_the_session_again():
    def call(m):
        s = session(m)
        s.set_providers(["CUDAExecutionProvider", "CPUExecutionProvider"])
        return s.get_providers(), s.run(None, FEED)
    same(call)


# --- running ----------------------------------------------------------------------------------


@pytest.mark.parametrize("feed_and_names", [
    (FEED, None),
    (FEED, []),
    (FEED, ["j"]),
    (FEED, ["q"]),
    ({"x": [1, 2], "y": [1.5, 2], "i": [1, 2, 3]}, None),      # lists take the input's type
    ({"x": X, "y": X, "i": [1.5, 2.5]}, None),                   # floats made int32, as onnxruntime
    ({"x": X.astype(np.float64), "y": X, "i": I}, None),         # arrays of another type are not
    ({"x": X, "y": X, "i": I.astype(np.int64)}, None),
    ({"x": np.array([True, False]), "y": X, "i": I}, None),
    ({"x": np.array(["a", "b"]), "y": X, "i": I}, None),
    ({"x": X, "y": X, "i": np.int32(3)}, None),                  # scalars are not arrays
    ({"x": 1.0, "y": X, "i": I}, None),
    ({"x": (1.0, 2.0), "y": X, "i": I}, None),
    ({"x": X, "y": X, "k": I}, None),                            # a wrong name: the missing one
    ({"x": X, "y": X, "i": I, "k": I}, None),                    # an extra name
    ({"x": X, "y": X}, None),
    ({1: X}, None),
    ({"x": np.ones(3, np.float32), "y": X, "i": I}, None),       # a fixed dim
    ({"x": np.ones((1, 2), np.float32), "y": X, "i": I}, None),  # rank
    ({"x": [[1.0, 2.0]], "y": X, "i": I}, None),
    ({"x": np.ones(4, np.float32)[::2], "y": X, "i": I}, None),  # strided
    ({"x": X, "y": X, "i": np.zeros(0, np.int32)}, None),        # empty
], ids=lambda c: None)
def test_run_inputs(feed_and_names):
    feed, names = feed_and_names
    same(lambda m: session(m).run(names, feed))


def test_a_feed_that_is_not_a_mapping():
    same(lambda m: session(m).run(None, [("x", X)]))


def test_free_dimension_overrides():
    def make(m):
        so = m.SessionOptions()
        so.add_free_dimension_override_by_name("n", 3)
        return m.InferenceSession(MODEL, so, providers=CPU)
    same(lambda m: [a.shape for a in make(m).get_inputs()])
    same(lambda m: make(m).run(None, FEED))
    same(lambda m: make(m).run(None, {**FEED, "i": np.arange(2, dtype=np.int32)}))


def test_run_async_calls_back_with_the_results():
    def call(m):
        done, got = threading.Event(), []

        def callback(results, user_data, error):
            got.append((results, user_data, error))
            done.set()

        session(m).run_async(None, FEED, callback, "user data")
        assert done.wait(30)
        return got[0]
    same(call)


# --- OrtValue, run_with_ort_values, IOBinding ---------------------------------------------------


@pytest.mark.parametrize("call", [
    lambda m: [getattr(m.OrtValue.ortvalue_from_numpy(X), f)() for f in
               ["shape", "data_type", "element_type", "device_name", "has_value", "is_tensor",
                "is_tensor_sequence", "is_sparse_tensor", "tensor_size_in_bytes"]],
    lambda m: m.OrtValue.ortvalue_from_numpy(X).numpy(),
    lambda m: m.OrtValue.ortvalue_from_numpy(X).data_ptr() == X.ctypes.data,
    lambda m: np.shares_memory(m.OrtValue.ortvalue_from_numpy(X).numpy(), X),
    lambda m: (lambda v: (v.shape(), v.data_type()))(m.OrtValue.ortvalue_from_shape_and_type([2, 3], np.float32)),
    lambda m: m.OrtValue.ortvalue_from_shape_and_type([2], TensorProto.INT64).data_type(),
    lambda m: m.OrtValue.ortvalue_from_numpy(X, "cuda", 0),
    lambda m: m.OrtValue.ortvalue_from_numpy([1, 2]),
    lambda m: np.asarray(m.OrtValue.ortvalue_from_numpy(I)),
], ids=lambda c: None)
def test_ort_values(call):
    same(call)


def test_update_inplace_writes_the_array():
    def call(m):
        a = np.zeros(2, np.float32)
        m.OrtValue.ortvalue_from_numpy(a).update_inplace(X)
        return a
    same(call)


@pytest.mark.parametrize("call", [
    lambda m: session(m).run_with_ort_values(
        ["z"], {k: m.OrtValue.ortvalue_from_numpy(v) for k, v in FEED.items()}),
    lambda m: session(m).run_with_ort_values(
        None, {k: m.OrtValue.ortvalue_from_numpy(v) for k, v in FEED.items()}),
    lambda m: type(session(m).run_with_ort_values(
        ["z"], {k: m.OrtValue.ortvalue_from_numpy(v) for k, v in FEED.items()})[0]).__name__,
    lambda m: session(m).run_with_ort_values(["z"], {"x": X, "y": X, "i": I}),
], ids=lambda c: None)
def test_run_with_ort_values(call):
    same(call)


def bound(m, outputs):
    s = session(m)
    io = s.io_binding()
    for k, v in FEED.items():
        io.bind_cpu_input(k, v)
    extra = outputs(m, io)
    s.run_with_iobinding(io)
    return [o.numpy() for o in io.get_outputs()], io.copy_outputs_to_cpu(), extra


def into_buffer(m, io):
    buf = np.full(2, -1, np.float32)
    io.bind_output("z", "cpu", 0, np.float32, [2], buf.ctypes.data)
    return buf  # written in place by the run


def into_ort_value(m, io):
    v = m.OrtValue.ortvalue_from_shape_and_type([2], np.float32)
    io.bind_ortvalue_output("z", v)
    return v


@pytest.mark.parametrize("outputs", [
    lambda m, io: (io.bind_output("z"), io.bind_output("j")),
    lambda m, io: io.bind_output("j"),
    into_buffer,
    into_ort_value,
    lambda m, io: None,                        # nothing bound: an error
    lambda m, io: io.bind_cpu_input("nope", X),
], ids=["allocated", "one", "buffer", "ortvalue", "none", "bad-input-name"])
def test_io_binding(outputs):
    same(lambda m: bound(m, outputs))


def test_io_binding_by_address():
    def call(m):
        s = session(m)
        io = s.io_binding()
        x = X.copy()
        io.bind_input("x", "cpu", 0, np.float32, [2], x.ctypes.data)
        io.bind_cpu_input("y", X)
        io.bind_cpu_input("i", I)
        io.bind_output("z")
        s.run_with_iobinding(io)
        x[0] = 10  # bound by address: the next run reads the new value
        s.run_with_iobinding(io)
        return io.copy_outputs_to_cpu()
    same(call)


# --- profiling --------------------------------------------------------------------------------


def test_profiling_writes_a_chrome_trace_like_onnxruntime(tmp_path):
    def call(m):
        so = m.SessionOptions()
        so.enable_profiling = True
        so.profile_file_prefix = str(tmp_path / m.__name__)
        s = m.InferenceSession(MODEL, so, providers=CPU)
        s.run(None, FEED)
        s.run(None, FEED)
        assert isinstance(s.get_profiling_start_time_ns(), int)
        path = s.end_profiling()
        events = json.loads(open(path).read())
        session_events = [e for e in events if e["cat"] == "Session"]
        keys = sorted({k for e in events for k in e})
        return (os.path.basename(path).startswith(m.__name__ + "_"), path.endswith(".json"), keys,
                sum(e["name"] == "model_run" for e in session_events),
                "session_initialization" in {e["name"] for e in session_events},
                all(e["ph"] == "X" and e["dur"] >= 0 for e in events), s.end_profiling())
    same(call)


def test_end_profiling_without_profiling_is_empty():
    same(lambda m: session(m).end_profiling())


# --- installing vinort as onnxruntime ---------------------------------------------------------

INSTALLED = """
import sys, vinort
module = vinort.install_as_onnxruntime()
import onnxruntime
from onnxruntime.capi import _pybind_state as C
from onnxruntime.capi.onnxruntime_pybind11_state import InvalidArgument, Fail, NoSuchFile
assert onnxruntime is module and onnxruntime.__vinort__
assert onnxruntime.InferenceSession is vinort.InferenceSession
assert InvalidArgument is vinort.InvalidArgument and C.get_available_providers() == vinort.get_available_providers()
assert onnxruntime.__version__ == onnxruntime.get_version_string() != vinort.__version__
print("ok")
"""

FROM_ENVIRONMENT = """
import onnxruntime, vinort
assert onnxruntime.__vinort__ and onnxruntime.SessionOptions is vinort.SessionOptions
print("ok")
"""


def test_install_as_onnxruntime():
    out = subprocess.run([sys.executable, "-c", INSTALLED], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr


def test_the_environment_variable_installs_it_at_start_up():
    env = {**os.environ, "VINORT_AS_ONNXRUNTIME": "1"}
    out = subprocess.run([sys.executable, "-c", FROM_ENVIRONMENT], capture_output=True, text=True, env=env)
    assert out.stdout.strip() == "ok", out.stderr
    # Without it, onnxruntime is onnxruntime.
    env.pop("VINORT_AS_ONNXRUNTIME")
    out = subprocess.run([sys.executable, "-c", "import onnxruntime; print(hasattr(onnxruntime, '__vinort__'))"],
                         capture_output=True, text=True, env=env)
    assert out.stdout.strip() == "False", out.stderr


def test_installing_after_onnxruntime_was_imported_is_refused():
    code = "import onnxruntime, vinort\ntry:\n    vinort.install_as_onnxruntime()\nexcept ImportError as e:\n" \
           "    print('refused', 'first' in str(e))\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "refused True", out.stderr
