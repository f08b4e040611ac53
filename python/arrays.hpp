// NumPy arrays ↔ attn::tensor for the Python module. Inputs are viewed in place (no copy) when
// they are float32 and C-contiguous; outputs hand the tensor's storage to NumPy (no copy either).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>

#include "attn/tensor.hpp"

namespace attn::python {

namespace py = pybind11;

// An input array and the tensor viewing it; the array must outlive the tensor, so both travel
// together.
struct array_view {
  py::array array;
  tensor values;
};

// obj as a NumPy array: an array as it is, else np.asarray(obj) (or np.from_dlpack for an object
// with __dlpack__ alone), NumPy's own errors raised as they are (MemoryError among them);
// TypeError naming `name` for what NumPy can make only an object array of.
py::array any_array(py::handle obj, const std::string& name);

// A float32 array (anything np.asarray makes float32): viewed without a copy when C-contiguous,
// copied to C order otherwise. Other dtypes raise TypeError naming `name`: converting float64
// silently would hide a copy and a loss of precision.
array_view float32_input(py::handle obj, const std::string& name);

// A mask: bool (converted with keep_when as the meaning of True, see attn/mask.hpp) or any float
// dtype (additive, converted to float32).
tensor mask_input(py::handle obj, const std::string& name, bool keep_when);

// A float32 NumPy array that owns the tensor's storage.
py::array to_numpy(tensor t);

}  // namespace attn::python
