# Shared by the scripts (source it, do not run it): finding the OpenVINO that vinort loads.
#
#   source scripts/lib.sh
#   use_private_openvino        # VINORT_OPENVINO_LIB from scripts/py-env unless already set

# The `libs` folder of the `openvino` package of the Python interpreter $1 (libopenvino_c).
openvino_libs() {
    "$1" -c 'import openvino, os; print(os.path.join(os.path.dirname(openvino.__file__), "libs"))'
}

# Exports VINORT_OPENVINO_LIB, when it is not set yet, as the OpenVINO of the project's private
# Python environment (scripts/py-env creates it on first use). Run from the repository root.
use_private_openvino() {
    if [[ -z "${VINORT_OPENVINO_LIB:-}" ]]; then
        local py
        py=$(scripts/py-env | tail -1)
        VINORT_OPENVINO_LIB=$(openvino_libs "$py")
        export VINORT_OPENVINO_LIB
    fi
}
