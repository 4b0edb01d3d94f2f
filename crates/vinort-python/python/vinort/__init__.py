"""vinort: run ONNX models through Intel OpenVINO and Rust CPU kernels, with onnxruntime's
Python API.

```python
import vinort as ort        # or: vinort.install_as_onnxruntime(), then `import onnxruntime`
sess = ort.InferenceSession("model.onnx", providers=["OpenVINOExecutionProvider", "CPUExecutionProvider"])
probs, = sess.run(None, {"input": x})
print(sess.plan())          # which provider runs which nodes, and why
```

What is and is not supported: crates/vinort-python/README.md.
"""

from . import _vinort
from ._options import (
    ExecutionMode,
    ExecutionOrder,
    GraphOptimizationLevel,
    OrtAllocatorType,
    OrtMemType,
    OrtSparseFormat,
    SessionOptions,
)
from ._runtime import (
    disable_telemetry_events,
    enable_telemetry_events,
    get_all_providers,
    get_build_info,
    get_device,
    get_version_string,
    has_collective_ops,
    install_as_onnxruntime,
    preload_dlls,
    set_default_logger_severity,
    set_default_logger_verbosity,
    set_global_thread_pool_sizes,
    set_seed,
)
from ._session import InferenceSession
from ._values import IOBinding, OrtDevice, OrtValue
from ._vinort import (
    DeviceReset,
    EngineError,
    EPFail,
    Fail,
    InvalidArgument,
    InvalidGraph,
    InvalidModel,
    InvalidProtobuf,
    MemoryLimitExceeded,
    ModelLoadCanceled,
    ModelLoaded,
    ModelMetadata,
    ModelRequiresCompilation,
    NoModel,
    NodeArg,
    NoSuchFile,
    NotFound,
    NotImplemented,
    ProviderError,
    RunCancelled,
    RunOptions,
    RuntimeException,
    UnsupportedNodes,
    VinortError,
    cpu_kind,
    get_available_providers,
)

__version__ = _vinort.__version__

from . import capi  # noqa: E402  (after the names it re-exports)

__all__ = [
    "DeviceReset", "EPFail", "EngineError", "ExecutionMode", "ExecutionOrder", "Fail", "GraphOptimizationLevel",
    "IOBinding", "InferenceSession", "InvalidArgument", "InvalidGraph", "InvalidModel", "InvalidProtobuf",
    "MemoryLimitExceeded", "ModelLoadCanceled", "ModelLoaded", "ModelMetadata", "ModelRequiresCompilation",
    "NoModel", "NoSuchFile", "NodeArg", "NotFound", "NotImplemented", "OrtAllocatorType", "OrtDevice",
    "OrtMemType", "OrtSparseFormat", "OrtValue", "ProviderError", "RunCancelled", "RunOptions",
    "RuntimeException", "SessionOptions", "UnsupportedNodes", "VinortError", "cpu_kind",
    "disable_telemetry_events", "enable_telemetry_events", "get_all_providers", "get_available_providers",
    "get_build_info", "get_device", "get_version_string", "has_collective_ops", "install_as_onnxruntime",
    "preload_dlls", "set_default_logger_severity", "set_default_logger_verbosity",
    "set_global_thread_pool_sizes", "set_seed",
]
