// A model file's tensors into a network's parameters, as every model kind reads them.
#pragma once

#include <string>

#include "attn/safetensors.hpp"
#include "nn/parameter.hpp"

namespace attn::train {

// p's tensor of the file (by p's name) into p's values: an input error naming the source when it
// is missing, of another shape, or holds a non-finite value (a NaN would only predict NaN, as
// checkpoints and .attnvec files are checked).
void read_parameter(const safetensors_file& file, nn::parameter<float>& p, const std::string& source);

}  // namespace attn::train
