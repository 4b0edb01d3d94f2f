"""The onnxruntime-shaped API: providers and options, errors, input forms, outputs."""

from __future__ import annotations

import threading

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from conftest import MODELS, OPENVINO_CPU, PROVIDER_LISTS, assert_close, load_test_data

MOBILENET = str(MODELS / "mobilenetv2_tiny" / "model.onnx")
BERT = str(MODELS / "bert_tiny" / "model.onnx")
PARTITION = str(MODELS / "partition_cnn" / "model.onnx")


@pytest.fixture(scope="module")
def mobilenet(vinort):
    return vinort.InferenceSession(MOBILENET, providers=["CPUExecutionProvider"])


@pytest.fixture(scope="module")
def bert(vinort):
    return vinort.InferenceSession(BERT, providers=["CPUExecutionProvider"])


@pytest.fixture(scope="module")
def image():
    return np.random.default_rng(3).standard_normal((1, 3, 64, 64)).astype(np.float32)


# --- module -----------------------------------------------------------------------------------


def test_version_and_available_providers(vinort):
    assert isinstance(vinort.__version__, str) and vinort.__version__.count(".") == 2
    # scripts/python-tests points VINORT_OPENVINO_LIB at the project's OpenVINO.
    assert vinort.get_available_providers() == ["OpenVINOExecutionProvider", "CPUExecutionProvider"]
    assert vinort.get_device() == "CPU"
    assert issubclass(vinort.VinortError, RuntimeError)
    for sub in ["InvalidArgument", "NoSuchFile", "InvalidModel", "UnsupportedNodes", "ProviderError",
                "RunCancelled", "MemoryLimitExceeded"]:
        assert issubclass(getattr(vinort, sub), vinort.VinortError), sub


# --- providers --------------------------------------------------------------------------------


def test_default_providers_are_the_available_ones(vinort):
    sess = vinort.InferenceSession(MOBILENET)
    assert sess.get_providers() == vinort.get_available_providers()
    assert "OpenVino(CPU)" in sess.plan()


def test_an_unavailable_provider_is_warned_about_and_left_out(vinort):
    # As onnxruntime: a provider this build lacks is a warning naming the available ones, and
    # the CPU provider is always there to run what the others leave.
    with pytest.warns(UserWarning, match="CUDAExecutionProvider.*OpenVINOExecutionProvider, CPUExecutionProvider"):
        sess = vinort.InferenceSession(MOBILENET, providers=["CUDAExecutionProvider"])
    assert sess.get_providers() == ["CPUExecutionProvider"]
    sess = vinort.InferenceSession(MOBILENET, providers=["OpenVINOExecutionProvider"])
    assert sess.get_providers() == ["OpenVINOExecutionProvider", "CPUExecutionProvider"]
    so = vinort.SessionOptions()
    so.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    sess = vinort.InferenceSession(MOBILENET, so, providers=["OpenVINOExecutionProvider"])
    assert sess.get_providers() == ["OpenVINOExecutionProvider"]


def test_provider_tuples_and_options(vinort, image):
    sess = vinort.InferenceSession(
        MOBILENET,
        providers=[("OpenVINOExecutionProvider", {"device_type": "CPU", "precision": "FP32", "num_of_threads": 1}),
                   "CPUExecutionProvider"],
    )
    assert sess.get_providers() == ["OpenVINOExecutionProvider", "CPUExecutionProvider"]
    assert sess.get_provider_options() == {
        "OpenVINOExecutionProvider": {"device_type": "CPU", "precision": "FP32", "num_of_threads": "1"},
        "CPUExecutionProvider": {},
    }
    cpu = vinort.InferenceSession(MOBILENET, providers=["CPUExecutionProvider"])
    assert_close(sess.run(None, {"input": image})[0], cpu.run(None, {"input": image})[0], "tuple-form providers")


def test_provider_option_mistakes(vinort):
    # As onnxruntime: bad provider arguments are a ValueError, which (with its default
    # enable_fallback) makes the session on the CPU provider instead, announced on stdout.
    strict = {"enable_fallback": 0}
    with pytest.raises(ValueError, match="same length"):
        vinort.InferenceSession(MOBILENET, providers=OPENVINO_CPU[0], provider_options=[{}], **strict)
    with pytest.raises(ValueError, match="Only string values"):
        vinort.InferenceSession(MOBILENET, providers=[("CPUExecutionProvider", {})], provider_options=[{}],
                                **strict)
    fallen_back = vinort.InferenceSession(MOBILENET, providers=OPENVINO_CPU[0], provider_options=[{}])
    assert fallen_back.get_providers() == ["CPUExecutionProvider"]
    with pytest.warns(UserWarning, match="Duplicate provider"):
        vinort.InferenceSession(MOBILENET, providers=["CPUExecutionProvider", "CPUExecutionProvider"])
    strict_ov = {"providers": ["OpenVINOExecutionProvider"], "enable_fallback": 0}
    with pytest.raises(vinort.InvalidArgument, match="precision"):
        vinort.InferenceSession(MOBILENET, provider_options=[{"precision": "FP99"}], **strict_ov)
    with pytest.raises(vinort.InvalidArgument, match="no_such_key"):
        vinort.InferenceSession(MOBILENET, provider_options=[{"no_such_key": "1"}], **strict_ov)
    # onnxruntime's CPU provider options (arena knobs) are accepted and ignored.
    sess = vinort.InferenceSession(MOBILENET, providers=["CPUExecutionProvider"],
                                   provider_options=[{"arena_extend_strategy": "kSameAsRequested"}])
    assert sess.get_provider_options() == {"CPUExecutionProvider": {}}
    with pytest.raises(ValueError, match="sequence"):
        vinort.InferenceSession(MOBILENET, providers={"CPUExecutionProvider"}, **strict)


def split_options(vinort, **entries):
    opts = vinort.SessionOptions()
    for k, v in entries.items():
        opts.add_session_config_entry(k, v)
    return opts


def test_plan_names_each_provider_of_a_split_model(vinort):
    # partition_cnn has a node OpenVINO refuses: without the cost model (which finds the model
    # too small to be worth a hand-off), OpenVINO runs the rest and Cpu that node.
    opts = split_options(vinort, **{"session.cost_model": "0"})
    sess = vinort.InferenceSession(PARTITION, opts, providers=OPENVINO_CPU[0], provider_options=OPENVINO_CPU[1])
    assert [p for p, _ in sess._sess.partitions()] == ["OpenVino(CPU)", "Cpu", "OpenVino(CPU)"], sess.plan()
    assert "OpenVino(CPU)" in sess.plan() and "Cpu" in sess.plan()


def test_session_config_entries_reach_the_session(vinort, tmp_path):
    # session.cost_model: on by default (the small CNN runs on Cpu alone), "0"/"off" turn it off,
    # anything else is rejected as onnxruntime rejects a bad config value.
    ov = {"providers": OPENVINO_CPU[0], "provider_options": OPENVINO_CPU[1]}
    assert [p for p, _ in vinort.InferenceSession(PARTITION, **ov)._sess.partitions()] == ["Cpu"]
    off = vinort.InferenceSession(PARTITION, split_options(vinort, **{"session.cost_model": "off"}), **ov)
    assert "OpenVino(CPU)" in [p for p, _ in off._sess.partitions()]
    with pytest.raises(vinort.InvalidArgument, match="session.cost_model"):
        vinort.InferenceSession(PARTITION, split_options(vinort, **{"session.cost_model": "maybe"}), **ov)
    # ep.context_enable saves the compiled model where ep.context_file_path says; it runs alike.
    ctx = tmp_path / "ctx.onnx"
    save = split_options(vinort, **{"ep.context_enable": "1", "ep.context_file_path": str(ctx)})
    first = vinort.InferenceSession(MOBILENET, save, providers=["OpenVINOExecutionProvider"],
                                    provider_options=[OPENVINO_CPU[1][0]])
    assert ctx.exists()
    again = vinort.InferenceSession(str(ctx), providers=["OpenVINOExecutionProvider"],
                                    provider_options=[OPENVINO_CPU[1][0]])
    feeds, _ = load_test_data("mobilenetv2_tiny")
    np.testing.assert_array_equal(first.run(None, feeds)[0], again.run(None, feeds)[0])


# --- session options --------------------------------------------------------------------------


@pytest.mark.parametrize("make", ["vinort", "onnxruntime"])
def test_session_options(vinort, image, make):
    module = vinort if make == "vinort" else ort
    so = module.SessionOptions()
    so.intra_op_num_threads = 1
    so.graph_optimization_level = module.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3  # onnxruntime-only knobs are accepted
    sess = vinort.InferenceSession(MOBILENET, so, providers=["CPUExecutionProvider"])
    inputs, outputs = load_test_data("mobilenetv2_tiny")
    assert_close(sess.run(None, inputs)[0], outputs[0][1], "ORT_DISABLE_ALL, 1 thread")


def test_session_options_check_their_types(vinort):
    so = vinort.SessionOptions()
    with pytest.raises(TypeError, match="graph_optimization_level"):
        so.graph_optimization_level = 5
    with pytest.raises(AttributeError):
        so.no_such_option = 1


# --- loading ----------------------------------------------------------------------------------


def test_bytes_model(vinort, image, mobilenet):
    with open(MOBILENET, "rb") as f:
        data = f.read()
    sess = vinort.InferenceSession(data, providers=["CPUExecutionProvider"])
    assert sess.model_path is None and mobilenet.model_path == MOBILENET
    np.testing.assert_array_equal(sess.run(None, {"input": image})[0], mobilenet.run(None, {"input": image})[0])


def test_load_errors(vinort, tmp_path):
    with pytest.raises(vinort.NoSuchFile, match="nope.onnx"):
        vinort.InferenceSession(str(tmp_path / "nope.onnx"))
    with pytest.raises(vinort.InvalidModel):
        vinort.InferenceSession(b"this is not an onnx model")
    with pytest.raises(TypeError):
        vinort.InferenceSession(42)


# --- run errors -------------------------------------------------------------------------------


def check_error(vinort, sess, feed, name, cls=None):
    cls = cls or vinort.InvalidArgument
    with pytest.raises(cls) as e:
        sess.run(None, feed)
    assert isinstance(e.value, vinort.VinortError)
    assert f"'{name}'" in str(e.value), str(e.value)
    return str(e.value)


def test_run_errors_name_the_input(vinort, mobilenet, bert, image):
    # A misspelt name leaves the real one missing: onnxruntime's ValueError, naming both.
    with pytest.raises(ValueError, match=r"\['input'\].*\['inptu'\]"):
        mobilenet.run(None, {"inptu": image})
    check_error(vinort, mobilenet, {"input": image, "extra": image}, "extra")  # an unknown name
    check_error(vinort, mobilenet, {"input": image.astype(np.float64)}, "input")
    check_error(vinort, mobilenet, {"input": image[0]}, "input")  # rank 3 for rank 4
    check_error(vinort, mobilenet, {"input": np.zeros((1, 3, 32, 32), np.float32)}, "input")  # a fixed dim
    ids = np.zeros((1, 16), np.int64)
    with pytest.raises(ValueError, match="attention_mask"):
        bert.run(None, {"input_ids": ids})  # missing
    check_error(vinort, mobilenet, {"input": image.astype(np.complex64)}, "input")  # no vinort dtype
    check_error(vinort, mobilenet, {"input": np.array([["a"]])}, "input")  # strings for floats
    with pytest.raises(vinort.InvalidArgument, match="'nope'"):
        mobilenet.run(["nope"], {"input": image})
    with pytest.raises(AttributeError):
        mobilenet.run(None, [image])


def test_terminated_run_options(vinort, mobilenet, image):
    opts = vinort.RunOptions()
    opts.run_tag = "stopped-early"
    opts.terminate = True
    assert opts.terminate
    with pytest.raises(vinort.RunCancelled, match="stopped-early"):
        mobilenet.run(None, {"input": image}, opts)
    opts.terminate = False
    assert mobilenet.run(None, {"input": image}, opts)[0].shape == (1, 10)


# --- inputs and outputs -----------------------------------------------------------------------


def test_output_names_select_and_order(bert):
    inputs, outputs = load_test_data("bert_tiny")
    last, pooled = bert.run(None, inputs)
    p2, l2 = bert.run(["pooled", "last_hidden_state"], inputs)
    np.testing.assert_array_equal(p2, pooled)
    np.testing.assert_array_equal(l2, last)
    np.testing.assert_array_equal(bert.run([], inputs)[1], pooled)  # [] is all, as in onnxruntime
    (only,) = bert.run(["pooled"], inputs)
    np.testing.assert_array_equal(only, pooled)
    assert_close(last, outputs[0][1], "last_hidden_state")


def test_input_layouts_give_the_contiguous_result(mobilenet, image):
    """C-contiguous arrays are borrowed as they are; every other layout is copied once into C
    order first. Each must give the contiguous array's result exactly."""
    want = mobilenet.run(None, {"input": image})[0]
    wide = np.zeros((1, 3, 64, 128), np.float32)
    wide[..., ::2] = image
    strided = wide[..., ::2]
    assert not strided.flags.c_contiguous
    fortran = np.asfortranarray(image)
    assert not fortran.flags.c_contiguous and fortran.flags.f_contiguous
    big_endian = image.astype(">f4")
    raw = np.zeros(image.nbytes + 1, np.uint8)
    misaligned = np.frombuffer(raw.data, np.float32, image.size, offset=1).reshape(image.shape)
    misaligned[...] = image
    assert not misaligned.flags.aligned
    readonly = image.copy()
    readonly.flags.writeable = False
    for what, x in [("strided", strided), ("fortran", fortran), ("big-endian", big_endian),
                    ("misaligned", misaligned), ("read-only", readonly), ("nested list", image.tolist())]:
        if what == "nested list":
            x = np.asarray(x, np.float32)  # lists are float64 in numpy, as onnxruntime sees them
        np.testing.assert_array_equal(mobilenet.run(None, {"input": x})[0], want, err_msg=what)
    # The borrowed input is left as it was, and outputs belong to the caller.
    before = image.copy()
    out = mobilenet.run(None, {"input": image})[0]
    np.testing.assert_array_equal(image, before)
    assert out.flags.writeable
    out += 1


def test_concurrent_runs(vinort, image):
    sess = vinort.InferenceSession(MOBILENET, providers=OPENVINO_CPU[0], provider_options=OPENVINO_CPU[1])
    want = sess.run(None, {"input": image})[0]
    results, errors = [], []

    def work():
        try:
            for _ in range(5):
                results.append(sess.run(None, {"input": image})[0])
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(results) == 20
    for r in results:
        np.testing.assert_array_equal(r, want)


# --- a model with symbolic and unknown dims, strings, a sequence and an initializer input -----


def odd_model() -> bytes:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, None])
    s = helper.make_tensor_value_info("s", TensorProto.STRING, ["n"])
    bias = helper.make_tensor_value_info("bias", TensorProto.FLOAT, [1, 3, 1])
    k = helper.make_tensor_value_info("k", TensorProto.INT32, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3, None])
    seq = helper.make_tensor_sequence_value_info("seq", TensorProto.FLOAT, None)
    s_out = helper.make_tensor_value_info("s_out", TensorProto.STRING, ["n"])
    k_out = helper.make_tensor_value_info("k_out", TensorProto.INT32, [2])
    nodes = [
        helper.make_node("Add", ["x", "bias"], ["y"], name="add"),
        helper.make_node("SequenceConstruct", ["x", "y"], ["seq"], name="seq"),
        helper.make_node("Identity", ["s"], ["s_out"], name="strings"),
        helper.make_node("Neg", ["k"], ["k_out"], name="neg"),
    ]
    init = onnx.numpy_helper.from_array(np.array([1, 2, 3], np.float32).reshape(1, 3, 1), "bias")
    graph = helper.make_graph(nodes, "odd", [x, s, bias, k], [y, seq, s_out, k_out], [init])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8,
                              producer_name="vinort tests", doc_string="odd model", model_version=3)
    helper.set_model_props(model, {"author": "tests", "purpose": "io"})
    onnx.checker.check_model(model)
    return model.SerializeToString()


@pytest.mark.parametrize("plist", list(PROVIDER_LISTS))
def test_odd_model_matches_onnxruntime(vinort, plist):
    data = odd_model()
    providers, options = PROVIDER_LISTS[plist]
    sess = vinort.InferenceSession(data, providers=providers, provider_options=options)
    ref = ort.InferenceSession(data, providers=["CPUExecutionProvider"])

    def args(a):
        return [(x.name, x.shape, x.type) for x in a]

    assert args(sess.get_inputs()) == args(ref.get_inputs())
    assert args(sess.get_inputs())[0] == ("x", ["batch", 3, None], "tensor(float)")
    assert args(sess.get_outputs()) == args(ref.get_outputs())
    assert args(sess.get_outputs())[1] == ("seq", [], "seq(tensor(float))")
    assert args(sess.get_overridable_initializers()) == args(ref.get_overridable_initializers())
    assert repr(sess.get_inputs()[0]) == "NodeArg(name='x', type='tensor(float)', shape=['batch', 3, None])"
    meta, want = sess.get_modelmeta(), ref.get_modelmeta()
    assert (meta.producer_name, meta.description, meta.version, meta.custom_metadata_map) == (
        want.producer_name, want.description, want.version, want.custom_metadata_map)

    x = np.random.default_rng(1).standard_normal((2, 3, 5)).astype(np.float32)
    feeds = {"x": x, "s": np.array(["a", "bé", ""]), "k": np.array([4, -7], np.int32)}
    got, expected = sess.run(None, feeds), ref.run(None, feeds)
    assert_close(got[0], expected[0], "y")
    assert isinstance(got[1], list) and len(got[1]) == 2
    for g, w in zip(got[1], expected[1]):
        assert_close(g, w, "seq item")
    assert got[2].dtype == object and got[2].tolist() == expected[2].tolist() == ["a", "bé", ""]
    assert_close(got[3], expected[3], "k_out")
    # bytes and object arrays are strings too; the overridable initializer can be fed.
    # (onnxruntime itself cannot take a bytes array: it is given the same strings as str.)
    feeds.update(s=np.array(["a", "b"], object), bias=np.zeros((1, 3, 1), np.float32))
    expected = ref.run(["s_out", "y"], feeds)
    got = sess.run(["s_out", "y"], {**feeds, "s": np.array([b"a", b"b"])})
    np.testing.assert_array_equal(sess.run(["y"], feeds)[0], got[1])
    assert got[0].tolist() == expected[0].tolist() == ["a", "b"]
    assert_close(got[1], expected[1], "y with the initializer overridden")


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int8, np.int16, np.int32, np.int64,
                                   np.uint8, np.uint16, np.uint32, np.uint64, np.bool_])
def test_every_numeric_dtype_round_trips(vinort, dtype):
    """Identity over each element type numpy and vinort share: borrowed in, copied out."""
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    graph = helper.make_graph([helper.make_node("Identity", ["a"], ["b"], name="id")], "id",
                              [helper.make_tensor_value_info("a", elem, ["n", 3])],
                              [helper.make_tensor_value_info("b", elem, ["n", 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    sess = vinort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    a = (np.arange(12).reshape(4, 3) % 5).astype(dtype)
    (b,) = sess.run(None, {"a": a})
    assert b.dtype == a.dtype and b.shape == a.shape
    np.testing.assert_array_equal(b, a)
