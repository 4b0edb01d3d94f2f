"""onnxruntime's ``OrtValue``, ``IOBinding`` and ``OrtDevice`` on the CPU.

An ``OrtValue`` holds a numpy array (a list of them for a sequence) without copying it, so it is
fed to a run borrowed, as any C-contiguous array is. An ``IOBinding`` keeps its inputs borrowed
the same way and writes each output bound to a buffer (an ``OrtValue``, or memory given by
address) in place through vinort's I/O binding: a static-shape OpenVINO output lands there
with no copy at all. Only the CPU device exists here: another device is a clear error.
"""

from __future__ import annotations

import ctypes

import numpy as np

from . import _vinort

#: numpy dtype -> (ONNX TensorProto element type, onnxruntime's type name).
_ONNX_TYPES = {
    np.dtype(np.float32): (1, "float"),
    np.dtype(np.uint8): (2, "uint8"),
    np.dtype(np.int8): (3, "int8"),
    np.dtype(np.uint16): (4, "uint16"),
    np.dtype(np.int16): (5, "int16"),
    np.dtype(np.int32): (6, "int32"),
    np.dtype(np.int64): (7, "int64"),
    np.dtype(object): (8, "string"),
    np.dtype(np.bool_): (9, "bool"),
    np.dtype(np.float16): (10, "float16"),
    np.dtype(np.float64): (11, "double"),
    np.dtype(np.uint32): (12, "uint32"),
    np.dtype(np.uint64): (13, "uint64"),
}
_BY_CODE = {code: dtype for dtype, (code, _) in _ONNX_TYPES.items()}


def _onnx_type(dtype: np.dtype):
    if dtype.kind in "US":
        return _ONNX_TYPES[np.dtype(object)]
    try:
        return _ONNX_TYPES[dtype]
    except KeyError:
        raise _vinort.InvalidArgument(f"numpy dtype {dtype} has no ONNX element type vinort holds") from None


def _numpy_dtype(element_type) -> np.dtype:
    """A numpy dtype from a numpy type or an ONNX element type code."""
    if isinstance(element_type, (int, np.integer)) and not isinstance(element_type, bool):
        try:
            return _BY_CODE[int(element_type)]
        except KeyError:
            raise _vinort.NotImplemented(
                f"ONNX element type {element_type} has no numpy equivalent vinort can hold"
            ) from None
    return np.dtype(element_type)


def _check_cpu(device_type: str) -> None:
    if str(device_type).lower() != "cpu":
        raise _vinort.VinortError(
            f"device '{device_type}': vinort's Python package holds values on the CPU only (OpenVINO reads and "
            "writes them there)"
        )


class OrtDevice:
    """A device, as onnxruntime names it; vinort has the CPU."""

    def __init__(self, device_type="cpu", memory_type=0, device_id=0):
        self._type, self._memory, self._id = device_type, memory_type, device_id

    @staticmethod
    def cpu():
        return "cpu"

    def device_id(self):
        return self._id

    def device_type(self):
        return self._type

    def device_mem_type(self):
        return self._memory


class OrtValue:
    """A value for ``run_with_ort_values`` and I/O binding: a numpy array held without a
    copy, or a list of arrays (a sequence)."""

    def __init__(self, value, numpy_obj=None):
        self._vinort_array = value

    @classmethod
    def ortvalue_from_numpy(cls, numpy_obj, device_type="cpu", device_id=0, vendor_id=-1):
        """Wraps the array (no copy: the value reads and writes the array's memory)."""
        _check_cpu(device_type)
        if not isinstance(numpy_obj, np.ndarray):
            raise _vinort.VinortError("Creation of OrtValues is currently only supported from non-string numpy arrays")
        return cls(numpy_obj)

    @classmethod
    def ortvalue_from_numpy_with_onnx_type(cls, data, onnx_element_type):
        if _numpy_dtype(onnx_element_type) != data.dtype:
            raise _vinort.InvalidArgument(
                f"an array of {data.dtype} cannot hold ONNX element type {onnx_element_type} in vinort"
            )
        return cls(data)

    @classmethod
    def ortvalue_from_shape_and_type(cls, shape, element_type, device_type="cpu", device_id=0, vendor_id=-1):
        """A new (uninitialized) tensor of ``shape`` and ``element_type`` (a numpy type or an
        ONNX element type code)."""
        _check_cpu(device_type)
        return cls(np.empty(list(shape), dtype=_numpy_dtype(element_type)))

    def _get_c_value(self):
        return self._vinort_array

    def data_ptr(self) -> int:
        return int(self._tensor().ctypes.data)

    def device_name(self) -> str:
        return "cpu"

    def shape(self):
        return list(self._tensor().shape)

    def data_type(self) -> str:
        if self.is_tensor_sequence():
            inner = _onnx_type(self._vinort_array[0].dtype)[1] if self._vinort_array else "float"
            return f"seq(tensor({inner}))"
        return f"tensor({_onnx_type(self._tensor().dtype)[1]})"

    def element_type(self) -> int:
        return _onnx_type(self._tensor().dtype)[0]

    def tensor_size_in_bytes(self) -> int:
        return int(self._tensor().nbytes)

    def has_value(self) -> bool:
        return self._vinort_array is not None

    def is_tensor(self) -> bool:
        return isinstance(self._vinort_array, np.ndarray)

    def is_sparse_tensor(self) -> bool:
        return False

    def is_tensor_sequence(self) -> bool:
        return isinstance(self._vinort_array, list)

    def numpy(self):
        """The array (for a sequence, the list of arrays)."""
        return self._vinort_array

    def __array__(self, dtype=None, copy=None):
        a = self._tensor()
        if dtype is not None:
            a = a.astype(dtype, copy=bool(copy))
        elif copy:
            a = a.copy()
        return a

    def update_inplace(self, np_arr) -> None:
        """Copies ``np_arr`` into the value's memory (same shape and element type)."""
        a = self._tensor()
        if np_arr.shape != a.shape or np_arr.dtype != a.dtype:
            raise _vinort.InvalidArgument(
                f"update_inplace: the value holds {a.dtype}{list(a.shape)}, given {np_arr.dtype}{list(np_arr.shape)}"
            )
        np.copyto(a, np_arr)

    def as_sparse_tensor(self):
        raise _vinort.NotImplemented("vinort has no sparse tensors in Python")

    def _tensor(self) -> np.ndarray:
        if not isinstance(self._vinort_array, np.ndarray):
            raise _vinort.VinortError("the OrtValue is not a tensor")
        return self._vinort_array


def _array_at(address: int, dtype: np.dtype, shape) -> np.ndarray:
    """A writeable array over memory the caller owns, given by address."""
    count = int(np.prod(shape, dtype=np.int64)) if len(shape) else 1
    raw = (ctypes.c_byte * (count * dtype.itemsize)).from_address(int(address))
    return np.frombuffer(raw, dtype=dtype, count=count).reshape(list(shape))


class IOBinding:
    """onnxruntime's I/O binding: inputs bound once and borrowed at every run, outputs
    written into bound buffers in place or allocated by the run."""

    def __init__(self, session):
        self._session = session
        self._inputs = {}
        self._outputs = {}  # name -> array to write into, or None
        self._results = []

    def _input_names(self):
        return {a.name for a in self._session.get_inputs() + self._session.get_overridable_initializers()}

    def _check_input(self, name):
        if name not in self._input_names():
            raise _vinort.VinortError(f"Failed to find NodeArg with name: {name} in the def list")

    def _check_output(self, name):
        if name not in {a.name for a in self._session.get_outputs()}:
            raise _vinort.VinortError(f"Failed to find NodeArg with name: {name} in the def list")

    def bind_cpu_input(self, name, arr_on_cpu):
        """Binds the array as input ``name`` (borrowed at each run, not copied)."""
        self._check_input(name)
        self._inputs[name] = arr_on_cpu

    def bind_input(self, name, device_type, device_id, element_type, shape, buffer_ptr):
        """Binds memory given by address as input ``name``."""
        _check_cpu(device_type)
        self._check_input(name)
        self._inputs[name] = _array_at(buffer_ptr, _numpy_dtype(element_type), shape)

    def bind_ortvalue_input(self, name, ortvalue):
        self._check_input(name)
        self._inputs[name] = ortvalue._vinort_array

    def bind_output(self, name, device_type="cpu", device_id=0, element_type=None, shape=None, buffer_ptr=None):
        """Binds output ``name``: to memory given by address (``element_type``, ``shape``,
        ``buffer_ptr``), written in place, or with none of those to a new array per run."""
        _check_cpu(device_type)
        self._check_output(name)
        if buffer_ptr is None:
            self._outputs[name] = None
        else:
            if element_type is None or shape is None:
                raise _vinort.InvalidArgument(f"bind_output '{name}': a buffer needs its element_type and shape")
            self._outputs[name] = _array_at(buffer_ptr, _numpy_dtype(element_type), shape)

    def bind_ortvalue_output(self, name, ortvalue):
        """Binds output ``name`` to the value's array, written in place."""
        self._check_output(name)
        self._outputs[name] = ortvalue._tensor()

    def synchronize_inputs(self):
        pass

    def synchronize_outputs(self):
        pass

    def clear_binding_inputs(self):
        self._inputs = {}

    def clear_binding_outputs(self):
        self._outputs = {}
        self._results = []

    def get_outputs(self):
        """The outputs of the last run, as ``OrtValue``s, in the order they were bound."""
        return list(self._results)

    get_outputs_as_ortvaluevector = get_outputs

    def copy_outputs_to_cpu(self):
        """The outputs of the last run as new numpy arrays."""
        return [np.array(v.numpy(), copy=True) if v.is_tensor() else v.numpy() for v in self._results]

    def _run(self, native, run_options):
        if not self._outputs:
            raise _vinort.VinortError("Error in execution: At least one output should be requested.")
        bound = list(self._outputs.items())
        made = native.run_bound(self._inputs, bound, run_options)
        self._results = [OrtValue(target if target is not None else value)
                         for (_, target), value in zip(bound, made)]
