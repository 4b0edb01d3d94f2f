"""onnxruntime's ``onnxruntime.capi`` package, for code that imports from it (its exception
classes, ``_pybind_state``). Everything here is re-exported from vinort's own modules, so the
classes are the same objects however they are reached."""

from vinort.capi import _pybind_state, onnxruntime_inference_collection, onnxruntime_pybind11_state  # noqa: F401
