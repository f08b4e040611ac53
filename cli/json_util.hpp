// JSON helpers for CLI output: floats are written in their shortest form that reads back as the
// same float32 (so 0.1 prints as 0.1, not 0.10000000149011612).
#pragma once

#include <fmt/format.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "attn/tensor.hpp"

namespace attn::cli {

inline double json_float(float v) {
  return std::strtod(fmt::format("{}", v).c_str(), nullptr);
}

// A [rows, cols] tensor as a list of lists.
inline nlohmann::json json_matrix(const tensor& m) {
  tensor dense = m.contiguous();
  const int64_t rows = dense.dim(0), cols = dense.dim(1);
  nlohmann::json out = nlohmann::json::array();
  for (int64_t i = 0; i < rows; ++i) {
    nlohmann::json row = nlohmann::json::array();
    for (int64_t j = 0; j < cols; ++j) row.push_back(json_float(dense.data()[i * cols + j]));
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace attn::cli
