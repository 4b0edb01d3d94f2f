"""onnxruntime's option enums and ``SessionOptions``, as onnxruntime defines them.

``SessionOptions`` has exactly onnxruntime's attributes, with its defaults and its type checks
(a wrong type is a ``TypeError``, an unknown attribute an ``AttributeError``). What vinort does
with each is in crates/vinort-python/README.md; the session reads them by name, so an
``onnxruntime.SessionOptions`` works too.
"""

from __future__ import annotations

import enum

from . import _vinort


class GraphOptimizationLevel(enum.IntEnum):
    """How much the CPU provider's graph optimizer rewrites."""

    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_LAYOUT = 3
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    """Sequential or parallel execution of independent nodes (vinort runs its partitions in
    order, with threads inside each)."""

    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class ExecutionOrder(enum.IntEnum):
    """onnxruntime's node ordering policy (vinort's executor has its own memory plan)."""

    DEFAULT = 0
    PRIORITY_BASED = 1
    MEMORY_EFFICIENT = 2


class OrtMemType(enum.IntEnum):
    CPU_INPUT = -2
    CPU_OUTPUT = -1
    CPU = -1
    DEFAULT = 0


class OrtAllocatorType(enum.IntEnum):
    INVALID = -1
    ORT_DEVICE_ALLOCATOR = 0
    ORT_ARENA_ALLOCATOR = 1


class OrtSparseFormat(enum.IntEnum):
    ORT_SPARSE_UNDEFINED = 0
    ORT_SPARSE_COO = 1
    ORT_SPARSE_CSR = 2
    ORT_SPARSE_BLOCK_SPARSE = 4


def _int(name):
    def check(value):
        # bool is an int to Python, and to onnxruntime's bindings too.
        if not isinstance(value, int) and not hasattr(value, "__index__"):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        return int(value)

    return check


def _bool(name):
    def check(value):
        if not isinstance(value, (bool, int)):
            raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
        return bool(value)

    return check


def _str(name):
    def check(value):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a str, got {type(value).__name__}")
        return value

    return check


def _enum(name, cls):
    def check(value):
        # onnxruntime's bindings take only its enum; vinort also takes onnxruntime's own enum
        # values (an onnxruntime.GraphOptimizationLevel next to vinort), by value.
        if isinstance(value, cls):
            return value
        if type(value).__name__ == cls.__name__ and hasattr(value, "__int__"):
            return cls(int(value))
        raise TypeError(f"{name} must be a {cls.__name__}, got {type(value).__name__}")

    return check


#: attribute -> (default, check), onnxruntime's defaults.
_ATTRIBUTES = {
    "intra_op_num_threads": (0, _int("intra_op_num_threads")),
    "inter_op_num_threads": (0, _int("inter_op_num_threads")),
    "graph_optimization_level": (GraphOptimizationLevel.ORT_ENABLE_ALL,
                                 _enum("graph_optimization_level", GraphOptimizationLevel)),
    "execution_mode": (ExecutionMode.ORT_SEQUENTIAL, _enum("execution_mode", ExecutionMode)),
    "execution_order": (ExecutionOrder.DEFAULT, _enum("execution_order", ExecutionOrder)),
    "enable_profiling": (False, _bool("enable_profiling")),
    "profile_file_prefix": ("onnxruntime_profile_", _str("profile_file_prefix")),
    "optimized_model_filepath": ("", _str("optimized_model_filepath")),
    "enable_cpu_mem_arena": (True, _bool("enable_cpu_mem_arena")),
    "enable_mem_pattern": (True, _bool("enable_mem_pattern")),
    "enable_mem_reuse": (True, _bool("enable_mem_reuse")),
    "use_deterministic_compute": (False, _bool("use_deterministic_compute")),
    "use_per_session_threads": (True, _bool("use_per_session_threads")),
    "log_severity_level": (-1, _int("log_severity_level")),
    "log_verbosity_level": (0, _int("log_verbosity_level")),
    "logid": ("", _str("logid")),
}


class SessionOptions:
    """onnxruntime's ``SessionOptions``: the attributes and methods onnxruntime has."""

    __slots__ = tuple(_ATTRIBUTES) + ("_config", "_free_dims", "_free_denotations")

    def __init__(self):
        for name, (default, _) in _ATTRIBUTES.items():
            object.__setattr__(self, name, default)
        object.__setattr__(self, "_config", {})
        object.__setattr__(self, "_free_dims", {})
        object.__setattr__(self, "_free_denotations", {})

    def __setattr__(self, name, value):
        spec = _ATTRIBUTES.get(name)
        if spec is None:
            raise AttributeError(f"'SessionOptions' object has no attribute '{name}'")
        object.__setattr__(self, name, spec[1](value))

    def add_session_config_entry(self, key: str, value: str) -> None:
        """Sets a session config entry (onnxruntime's keys; vinort reads
        ``session.disable_cpu_ep_fallback`` and ``session.intra_op_thread_affinities`` is kept)."""
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError("add_session_config_entry(): key and value must be str")
        self._config[key] = value

    def get_session_config_entry(self, key: str) -> str:
        if key not in self._config:
            raise _vinort.VinortError(f"SessionOptions does not have configuration with key: {key}")
        return self._config[key]

    def add_free_dimension_override_by_name(self, dim_name: str, dim_value: int) -> None:
        """Fixes the symbolic dim ``dim_name`` of the model's inputs to ``dim_value``: inputs
        report it fixed, and a run given another size is refused (``InvalidArgument``)."""
        if not isinstance(dim_name, str):
            raise TypeError("add_free_dimension_override_by_name(): dim_name must be a str")
        self._free_dims[dim_name] = int(dim_value)

    def add_free_dimension_override_by_denotation(self, dim_denotation: str, dim_value: int) -> None:
        """Kept; vinort reads no dim denotations (a model rarely sets one)."""
        self._free_denotations[dim_denotation] = int(dim_value)

    def add_initializer(self, name: str, ort_value) -> None:
        raise _vinort.NotImplemented(
            f"add_initializer('{name}'): vinort does not replace a model's initializers from SessionOptions; "
            "feed an overridable initializer as a run input instead (get_overridable_initializers())"
        )

    def add_external_initializers(self, names, ort_values) -> None:
        raise _vinort.NotImplemented(
            "add_external_initializers: vinort does not replace a model's initializers from SessionOptions; "
            "external data files next to the model are read as ONNX specifies"
        )

    def register_custom_ops_library(self, library_path: str) -> None:
        raise _vinort.Fail(
            f"Failed to load library {library_path}: vinort cannot load onnxruntime custom-op libraries "
            "(they are built against onnxruntime's C++ kernel API); give vinort a model whose ops it has, "
            "or use onnxruntime for this one"
        )

    def has_providers(self) -> bool:
        return False

    def __repr__(self):
        return "SessionOptions(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in _ATTRIBUTES) + ")"


#: The session config entries vinort reads, looked up on an onnxruntime.SessionOptions too.
_CONFIG_KEYS_READ = (
    "session.disable_cpu_ep_fallback",
    "session.cost_model",
    "ep.context_enable",
    "ep.context_file_path",
    "ep.context_embed_mode",
)


def read(options) -> dict:
    """What a session takes from ``SessionOptions`` (vinort's or onnxruntime's, read by
    attribute; missing attributes keep onnxruntime's defaults)."""
    got = {name: default for name, (default, _) in _ATTRIBUTES.items()}
    got["config"], got["free_dims"] = {}, {}
    if options is None:
        return got
    for name in _ATTRIBUTES:
        got[name] = getattr(options, name, got[name])
    if isinstance(options, SessionOptions):
        got["config"] = dict(options._config)
        got["free_dims"] = dict(options._free_dims)
    else:
        for key in _CONFIG_KEYS_READ:
            try:
                got["config"][key] = options.get_session_config_entry(key)
            except Exception:  # onnxruntime raises for a key never set
                pass
    return got
