#include "arrays.hpp"

#include <utility>
#include <vector>

#include "attn/mask.hpp"

namespace attn::python {

namespace {

shape_t shape_of(const py::array& a) { return shape_t(a.shape(), a.shape() + a.ndim()); }

// C order, through NumPy itself: pybind11's array::ensure clears the error of a copy that fails
// (a broadcast view too large to copy) and hands back an empty array.
py::array c_order(const py::array& a) {
  if (a.flags() & py::array::c_style) return a;
  return py::module_::import("numpy").attr("ascontiguousarray")(a);
}

}  // namespace

py::array any_array(py::handle obj, const std::string& name) {
  if (py::isinstance<py::array>(obj)) return py::reinterpret_borrow<py::array>(obj);
  // np.asarray takes what has __array__ (a CPU torch tensor), the buffer protocol or a nested
  // list; np.from_dlpack what has only __dlpack__. Their errors (MemoryError, a tensor that
  // needs .detach()) come through as raised, in one line.
  const py::module_ np = py::module_::import("numpy");
  const bool dlpack_only = !py::hasattr(obj, "__array__") && py::hasattr(obj, "__dlpack__");
  py::array a = dlpack_only ? np.attr("from_dlpack")(obj) : np.attr("asarray")(obj);
  if (a.dtype().kind() == 'O')  // anything else becomes an array of objects
    throw py::type_error(name + " must be a NumPy array (or convertible with np.asarray), got " +
                         std::string(py::str(py::type::handle_of(obj).attr("__name__"))));
  return a;
}

array_view float32_input(py::handle obj, const std::string& name) {
  py::array a = any_array(obj, name);
  if (!a.dtype().is(py::dtype::of<float>()))
    throw py::type_error(name + " must be a float32 array, got " + std::string(py::str(a.dtype())) +
                         " (use " + name + ".astype(np.float32))");
  // Same dtype, so this copies only when the layout is not C order.
  py::array dense = c_order(a);
  tensor view = tensor::view(static_cast<const float*>(dense.data()), shape_of(dense));
  return {std::move(dense), std::move(view)};
}

tensor mask_input(py::handle obj, const std::string& name, bool keep_when) {
  py::array a = any_array(obj, name);
  const char kind = a.dtype().kind();
  if (kind != 'b' && kind != 'f')
    throw py::type_error(name + " must be a bool or float array, got " +
                         std::string(py::str(a.dtype())));
  // Both branches make a float32 copy: masks are small next to q, k, v, and the bool one is
  // rewritten into 0 / -inf anyway.
  py::array_t<float, py::array::c_style | py::array::forcecast> f(a);
  tensor values(shape_of(f), std::vector<float>(f.data(), f.data() + f.size()));
  return kind == 'b' ? additive_mask_from_bool(values, keep_when) : values;
}

py::array to_numpy(tensor t) {
  auto* owned = new tensor(t.contiguous());
  py::capsule owner(owned, [](void* p) { delete static_cast<tensor*>(p); });
  std::vector<py::ssize_t> shape(owned->shape().begin(), owned->shape().end());
  return py::array_t<float>(shape, owned->data(), owner);
}

}  // namespace attn::python
