// attn's errors as Python exceptions:
//   attn.Error(ValueError)  the base, with .kind ("usage" or "input"), .file, .problem, .where
//   attn.UsageError(Error)  how attn was called (shapes that do not fit, a bad option)
//   attn.InputError(Error)  what a file holds (missing, malformed, the wrong shape)
// Every one is a ValueError, so `except ValueError` catches them all.
#pragma once

#include <pybind11/pybind11.h>

namespace attn::python {

void register_errors(pybind11::module_& m);

}  // namespace attn::python
