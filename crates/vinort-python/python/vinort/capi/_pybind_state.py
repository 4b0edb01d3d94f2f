"""onnxruntime's ``onnxruntime.capi._pybind_state``: the native module's names."""

from vinort.capi.onnxruntime_pybind11_state import *  # noqa: F401,F403
from vinort.capi.onnxruntime_pybind11_state import InferenceSession  # noqa: F401
