#include "arrays.hpp"

#include <utility>
#include <vector>

#include "attn/mask.hpp"

namespace attn::python {

namespace {

shape_t shape_of(const py::array& a) { return shape_t(a.shape(), a.shape() + a.ndim()); }

py::array as_array(py::handle obj, const std::string& name) {
  py::array a = py::array::ensure(obj);
  if (!a) throw py::type_error(name + " must be a NumPy array (or convertible with np.asarray)");
  return a;
}

}  // namespace

array_view float32_input(py::handle obj, const std::string& name) {
  py::array a = as_array(obj, name);
  if (!a.dtype().is(py::dtype::of<float>()))
    throw py::type_error(name + " must be a float32 array, got " + std::string(py::str(a.dtype())) +
                         " (use " + name + ".astype(np.float32))");
  // Same dtype, so this copies only when the layout is not C order.
  py::array dense = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(a);
  tensor view = tensor::view(static_cast<const float*>(dense.data()), shape_of(dense));
  return {std::move(dense), std::move(view)};
}

tensor mask_input(py::handle obj, const std::string& name, bool keep_when) {
  py::array a = as_array(obj, name);
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
