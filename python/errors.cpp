#include "errors.hpp"

#include <exception>
#include <string>

#include "attn/error.hpp"

namespace attn::python {

namespace py = pybind11;

namespace {

// Owned by the module for the life of the interpreter (pybind11's translators are plain
// functions, so the types live in statics).
PyObject* error_type = nullptr;
PyObject* usage_error_type = nullptr;
PyObject* input_error_type = nullptr;

PyObject* new_type(py::module_& m, const char* name, const char* doc, PyObject* base) {
  const std::string qualified = std::string("attn.") + name;
  PyObject* type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, base, nullptr);
  if (type == nullptr) throw py::error_already_set();
  m.add_object(name, py::handle(type));
  return type;
}

void raise(const error& e) {
  PyObject* type = e.kind() == error_kind::usage ? usage_error_type : input_error_type;
  py::object instance = py::reinterpret_borrow<py::object>(type)(e.what());
  instance.attr("kind") = e.kind() == error_kind::usage ? "usage" : "input";
  instance.attr("file") = e.file();
  instance.attr("problem") = e.problem();
  instance.attr("where") = e.where();
  PyErr_SetObject(type, instance.ptr());
}

}  // namespace

void register_errors(py::module_& m) {
  error_type = new_type(m, "Error",
                        "An error from attn. Attributes: kind ('usage' or 'input'), file (the "
                        "path at fault, or ''), problem, where (offset, line or tensor, or '').",
                        PyExc_ValueError);
  usage_error_type = new_type(m, "UsageError",
                              "attn was called in a way that cannot work: shapes that do not "
                              "fit each other, a bad option value.",
                              error_type);
  input_error_type = new_type(
      m, "InputError", "A file is missing, malformed, or holds the wrong shapes.", error_type);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const error& e) {
      raise(e);
    }
  });
}

}  // namespace attn::python
