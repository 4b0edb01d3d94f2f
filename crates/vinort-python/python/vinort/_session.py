"""``InferenceSession``: onnxruntime's session class over vinort's native one.

The arguments are read the way onnxruntime reads them (its Python layer's rules: providers as
names or ``(name, options)`` tuples, unknown or unavailable providers warned about and left
out, duplicates warned about, the CPU provider always last as onnxruntime's fallback); a run
is one call into the native session, which checks the feed as onnxruntime does (a missing
input is a ``ValueError``, an unknown one ``InvalidArgument``) and borrows numpy memory.
"""

from __future__ import annotations

import collections.abc
import os
import threading
import warnings

from . import _options, _profiling, _vinort
from ._values import IOBinding, OrtValue

CPU = "CPUExecutionProvider"

#: Every provider name onnxruntime knows (``onnxruntime.get_all_providers()``, 1.31), so code
#: that checks a name against it behaves the same; vinort runs the ones
#: ``get_available_providers()`` lists.
ALL_PROVIDERS = [
    "NvTensorRTRTXExecutionProvider", "TensorrtExecutionProvider", "CUDAExecutionProvider",
    "MIGraphXExecutionProvider", "OpenVINOExecutionProvider", "DnnlExecutionProvider",
    "VitisAIExecutionProvider", "QNNExecutionProvider", "NnapiExecutionProvider",
    "VSINPUExecutionProvider", "JsExecutionProvider", "CoreMLExecutionProvider", "ACLExecutionProvider",
    "DmlExecutionProvider", "RknpuExecutionProvider", "WebNNExecutionProvider", "WebGpuExecutionProvider",
    "XnnpackExecutionProvider", "CANNExecutionProvider", "AzureExecutionProvider", "CPUExecutionProvider",
]


def normalize_providers(providers, provider_options, available):
    """onnxruntime's reading of ``providers``/``provider_options``: ``(names, options dicts)``,
    with a ``UserWarning`` for each name this build does not have (left out) and each duplicate.
    ``ValueError`` for arguments of the wrong shape, with onnxruntime's messages."""
    if providers is None:
        if provider_options is not None:
            raise ValueError("'provider_options' is given but 'providers' is not")
        return list(available), [{} for _ in available]
    # A str is a sequence too: each letter is an unknown provider, as onnxruntime reads it.
    if not isinstance(providers, collections.abc.Sequence):
        iter(providers)  # onnxruntime looks through them first: a TypeError when they are not iterable
        raise ValueError("'providers' should be a sequence.")
    pairs = []
    if provider_options is not None:
        if not isinstance(provider_options, collections.abc.Sequence):
            raise ValueError("'provider_options' should be a sequence.")
        if len(providers) != len(provider_options):
            raise ValueError("'providers' and 'provider_options' should be the same length if both are given.")
        if not all(isinstance(p, str) for p in providers):
            raise ValueError("Only string values for 'providers' are supported if 'provider_options' is given.")
        if not all(isinstance(o, dict) for o in provider_options):
            raise ValueError("'provider_options' values must be dicts.")
        pairs = list(zip(providers, provider_options))
    else:
        for p in providers:
            if isinstance(p, str):
                pairs.append((p, {}))
            elif isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) and isinstance(p[1], dict):
                pairs.append(p)
            else:
                raise ValueError("'providers' values must be either strings or (string, dict) tuples.")
    names, options = [], []
    for name, opts in pairs:
        if name not in available:
            warnings.warn(
                f"Specified provider '{name}' is not in available provider names."
                f"Available providers: '{', '.join(available)}' (vinort runs {', '.join(available)}; "
                f"'{name}' is left out)",
                stacklevel=4,
            )
            continue
        if name in names:
            warnings.warn(f"Duplicate provider '{name}' encountered, ignoring.", stacklevel=4)
            continue
        names.append(name)
        options.append({str(k): _option_text(v) for k, v in opts.items()})
    return names, options


def _option_text(value) -> str:
    # onnxruntime takes str(value); vinort's OpenVINO options read booleans as true/false.
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class InferenceSession:
    """A model ready to run: onnxruntime's ``InferenceSession``.

    ``InferenceSession(path_or_bytes, sess_options=None, providers=None, provider_options=None)``
    """

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None, **kwargs):
        if isinstance(path_or_bytes, (str, os.PathLike)):
            self._model_path, self._model_bytes = os.fspath(path_or_bytes), None
        elif isinstance(path_or_bytes, bytes):
            self._model_path, self._model_bytes = None, path_or_bytes
        else:
            raise TypeError(f"Unable to load from type '{type(path_or_bytes)}'")
        self._sess_options = sess_options if sess_options is not None else _options.SessionOptions()
        self._enable_fallback = int(kwargs.get("enable_fallback", 1)) == 1
        self._profiler = None
        try:
            self._create(providers, provider_options)
        except (_vinort.InvalidModel, _vinort.NoSuchFile):
            raise  # onnxruntime's classes for these are no RuntimeError: it does not retry them
        except (ValueError, RuntimeError) as e:
            if not self._enable_fallback:
                raise
            # onnxruntime's: a session that cannot be made with the providers asked for (bad
            # provider arguments, a provider that fails) is made once more on the CPU provider,
            # announced on stdout.
            print("*************** EP Error ***************")
            print(f"EP Error {e} when using {providers}")
            print(f"Falling back to ['{CPU}'] and retrying.")
            print("****************************************")
            try:
                self._create([CPU], None)
            except Exception as fallback_error:
                raise fallback_error from e
            self.disable_fallback()

    def _create(self, providers, provider_options):
        opts = _options.read(self._sess_options)
        if opts["optimized_model_filepath"]:
            warnings.warn(
                "SessionOptions.optimized_model_filepath is not written by vinort: its optimizations are "
                "made per provider when the session is built, not as one ONNX graph",
                stacklevel=3,
            )
        available = _vinort.get_available_providers()
        names, options = normalize_providers(providers, provider_options, available)
        # onnxruntime always registers its CPU provider last, for the nodes the others leave,
        # unless the session config says not to.
        if CPU not in names and opts["config"].get("session.disable_cpu_ep_fallback") != "1":
            names.append(CPU)
            options.append({})
        if not names:
            raise _vinort.InvalidArgument(
                "no execution provider is left to run the model (session.disable_cpu_ep_fallback=1 and none of "
                "the requested providers is available)"
            )
        self._requested = (providers, provider_options)
        profiler = _profiling.Profiler(opts["profile_file_prefix"]) if opts["enable_profiling"] else None
        with _profiling.span(profiler, "model_loading_uri" if self._model_path else "model_loading_array"):
            pass  # loading and building are one native call; the next span holds both
        with _profiling.span(profiler, "session_initialization"):
            self._sess = _vinort.Session(
                self._model_path if self._model_path is not None else self._model_bytes,
                [(n, list(o.items())) for n, o in zip(names, options)],
                opts["intra_op_num_threads"],
                int(opts["graph_optimization_level"]),
                list(opts["free_dims"].items()),
                # Fallback is resolved above, into the provider list, as onnxruntime does it.
                [(k, v) for k, v in opts["config"].items() if k != "session.disable_cpu_ep_fallback"],
            )
        for name, why in self._sess.skipped_providers():
            warnings.warn(f"{name} could not start and is left out: {why}", stacklevel=3)
        self._profiler = profiler
        # The fast path is the native run itself; profiling wraps it.
        self.run = self._run if profiler is None else self._run_profiled

    # --- running ------------------------------------------------------------------------------

    def _run(self, output_names, input_feed, run_options=None):
        """Computes the outputs: ``run(output_names, input_feed, run_options=None)``.

        ``output_names`` lists outputs by name (None or empty: all, in the model's order);
        ``input_feed`` maps input names to numpy arrays (lists are converted to the input's
        element type, as onnxruntime does). Returns numpy arrays, lists for sequences.
        """
        if not isinstance(input_feed, dict):
            input_feed = dict(input_feed.items())
        try:
            return self._sess.run(output_names or None, input_feed, run_options)
        except _vinort.EPFail as err:
            if not self._fallback_applies():
                raise
            self._fall_back(err)
            return self._sess.run(output_names or None, input_feed, run_options)

    run = _run

    def _run_profiled(self, output_names, input_feed, run_options=None):
        with _profiling.span(self._profiler, "model_run", self._sess.partitions()):
            return self._run(output_names, input_feed, run_options)

    def _fallback_applies(self) -> bool:
        return self._enable_fallback and self.get_providers() != [CPU]

    def _fall_back(self, err):
        # onnxruntime's: a provider failing at run time makes the session fall back to its CPU
        # provider once, announced, then run again.
        warnings.warn(f"EP Error: {err} using {self.get_providers()}; falling back to ['{CPU}'] and retrying.",
                      stacklevel=4)
        self.set_providers([CPU])
        self.disable_fallback()

    def run_async(self, output_names, input_feed, callback, user_data, run_options=None):
        """Runs on another thread and calls ``callback(results, user_data, error_text)`` (an
        empty error text on success), as onnxruntime does."""

        def work():
            try:
                results = self._run(output_names, input_feed, run_options)
            except Exception as e:  # handed to the callback, as onnxruntime does
                callback(None, user_data, str(e))
                return
            callback(results, user_data, "")

        threading.Thread(target=work, daemon=True).start()

    def run_with_ort_values(self, output_names, input_dict_ort_values, run_options=None):
        """Runs on ``OrtValue`` inputs and returns ``OrtValue`` outputs."""
        feed = {}
        for name, value in input_dict_ort_values.items():
            if not isinstance(value, OrtValue):
                raise AttributeError(f"'{type(value).__name__}' object has no attribute '_get_c_value'")
            feed[name] = value._vinort_array
        return [OrtValue(v) for v in self._run(output_names, feed, run_options)]

    def io_binding(self) -> IOBinding:
        """An I/O binding for ``run_with_iobinding``."""
        return IOBinding(self)

    def run_with_iobinding(self, iobinding: IOBinding, run_options=None) -> None:
        """Runs with the binding's inputs, writing each output bound to a buffer in place."""
        iobinding._run(self._sess, run_options)

    # --- providers ----------------------------------------------------------------------------

    def get_providers(self):
        """The providers the session uses, in priority order."""
        return self._sess.get_providers()

    def get_provider_options(self):
        """The options of each provider the session uses (values as strings)."""
        return self._sess.get_provider_options()

    def set_providers(self, providers=None, provider_options=None) -> None:
        """Builds the session again with these providers (as in the constructor)."""
        self._create(providers, provider_options)

    def disable_fallback(self) -> None:
        """No fallback to the CPU provider when a provider fails at run time."""
        self._enable_fallback = False

    def enable_fallback(self) -> None:
        """Falls back to the CPU provider once when a provider fails at run time (default)."""
        self._enable_fallback = True

    # --- what the model is --------------------------------------------------------------------

    def get_session_options(self):
        return self._sess_options

    def get_inputs(self):
        return self._sess.get_inputs()

    def get_outputs(self):
        return self._sess.get_outputs()

    def get_overridable_initializers(self):
        return self._sess.get_overridable_initializers()

    def get_modelmeta(self):
        return self._sess.get_modelmeta()

    @property
    def model_path(self):
        """The model file's path, or None for a model given as bytes (vinort's)."""
        return self._model_path

    def plan(self) -> str:
        """vinort's partition plan: which provider runs which nodes, and why every refused node
        was refused."""
        return self._sess.plan()

    # --- profiling ----------------------------------------------------------------------------

    def end_profiling(self) -> str:
        """Writes the profile (Chrome trace JSON, as onnxruntime's) and returns its file name;
        an empty string when profiling is off or already ended."""
        if self._profiler is None:
            return ""
        path = self._profiler.write()
        self._profiler = None
        self.run = self._run
        return path

    def get_profiling_start_time_ns(self) -> int:
        return self._profiler.start_ns if self._profiler is not None else 0
