#include "train/parameter_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "attn/error.hpp"

namespace attn::train {

void read_parameter(const safetensors_file& file, nn::parameter<float>& p, const std::string& source) {
  auto it = file.tensors.find(p.name);
  if (it == file.tensors.end()) throw_input(source, fmt::format("missing tensor '{}'", p.name));
  if (it->second.shape() != p.shape)
    throw_input(source, fmt::format("tensor '{}' has shape {}, expected {}", p.name, shape_to_string(it->second.shape()),
                                    shape_to_string(p.shape)));
  const tensor t = it->second.contiguous();
  const auto bad = std::find_if(t.values().begin(), t.values().end(), [](float x) { return !std::isfinite(x); });
  if (bad != t.values().end())
    throw_input(source, fmt::format("tensor '{}' holds a non-finite value ({})", p.name, *bad),
                fmt::format("element {}", bad - t.values().begin()));
  std::copy(t.values().begin(), t.values().end(), p.value.begin());
}

}  // namespace attn::train
