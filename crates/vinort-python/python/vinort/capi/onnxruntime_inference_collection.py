"""onnxruntime's ``onnxruntime.capi.onnxruntime_inference_collection``: the Python classes."""

from vinort import InferenceSession, IOBinding, OrtDevice, OrtValue  # noqa: F401
from vinort._session import normalize_providers as check_and_normalize_provider_args  # noqa: F401
