#include "attn/tensor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <utility>

#include "attn/error.hpp"

namespace attn {

std::string shape_to_string(const shape_t& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

int64_t shape_numel(const shape_t& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw_usage("negative dimension in shape " + shape_to_string(shape));
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      throw_usage("shape " + shape_to_string(shape) + " has too many elements");
    n *= d;
  }
  return n;
}

shape_t contiguous_strides(const shape_t& shape) {
  shape_t strides(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    if (i == 0) break;
    // Checked although shape_numel() checks the element count: with a 0 elsewhere the count
    // is 0, but the strides of [0, 2^32, 2^32] still do not fit in int64.
    if (shape[i] < 0) throw_usage("negative dimension in shape " + shape_to_string(shape));
    if (shape[i] != 0 && stride > std::numeric_limits<int64_t>::max() / shape[i])
      throw_usage("shape " + shape_to_string(shape) + " has too many elements");
    stride *= shape[i];
  }
  return strides;
}

namespace {
// Where a tensor of zero elements points: its storage must still be non-null, since a null
// storage is what marks the empty (default-constructed) tensor.
float no_values = 0.0f;

// The vector owns the values; the returned pointer points at its first element and keeps it alive.
std::shared_ptr<float> owning(std::shared_ptr<std::vector<float>> values) {
  if (values == nullptr) return nullptr;
  float* first = values->empty() ? &no_values : values->data();
  return {std::move(values), first};
}
}  // namespace

tensor::tensor(shape_t shape, float fill)
    : storage_(owning(std::make_shared<std::vector<float>>(
          static_cast<size_t>(shape_numel(shape)), fill))),
      shape_(std::move(shape)),
      strides_(contiguous_strides(shape_)) {}

tensor::tensor(shape_t shape, std::vector<float> values)
    : shape_(std::move(shape)), strides_(contiguous_strides(shape_)) {
  if (static_cast<int64_t>(values.size()) != shape_numel(shape_))
    throw_usage(fmt::format("{} values do not fill shape {}", values.size(),
                            shape_to_string(shape_)));
  storage_ = owning(std::make_shared<std::vector<float>>(std::move(values)));
}

tensor::tensor(std::shared_ptr<std::vector<float>> storage, int64_t offset, shape_t shape,
               shape_t strides)
    : tensor(owning(std::move(storage)), offset, std::move(shape), std::move(strides)) {}

tensor::tensor(std::shared_ptr<float> base, int64_t offset, shape_t shape, shape_t strides)
    : storage_(std::move(base)), offset_(offset), shape_(std::move(shape)),
      strides_(std::move(strides)) {
  if (shape_.size() != strides_.size()) throw_usage("shape and strides differ in rank");
}

tensor tensor::uninitialized(shape_t shape) {
  const int64_t n = shape_numel(shape);
  shape_t strides = contiguous_strides(shape);
  std::shared_ptr<float> values(new float[static_cast<size_t>(std::max<int64_t>(n, 1))],
                                std::default_delete<float[]>());
#ifdef ATTN_POISON_UNINITIALIZED
  // Sanitizer builds: NaNs, so that an output element a kernel forgets to write fails the tests
  // instead of passing on memory that happened to be zero.
  std::fill(values.get(), values.get() + n, std::numeric_limits<float>::quiet_NaN());
#endif
  return tensor(std::move(values), 0, std::move(shape), std::move(strides));
}

tensor tensor::view(float* data, shape_t shape) {
  const int64_t n = shape_numel(shape);
  if (data == nullptr && n > 0)
    throw_usage(fmt::format("a view of shape {} over a null pointer", shape_to_string(shape)));
  float* first = data == nullptr ? &no_values : data;
  // The aliasing constructor with no owner: a non-null pointer that frees nothing.
  shape_t strides = contiguous_strides(shape);
  return tensor(std::shared_ptr<float>(std::shared_ptr<void>(), first), 0, std::move(shape),
                std::move(strides));
}

tensor tensor::view(const float* data, shape_t shape) {
  // The library never writes its inputs, so dropping const is safe for them; the header tells
  // callers not to write through the result.
  return view(const_cast<float*>(data), std::move(shape));
}

int64_t tensor::dim(int i) const {
  int r = rank();
  int j = i < 0 ? i + r : i;
  if (j < 0 || j >= r) throw_usage(fmt::format("axis {} out of range for rank {}", i, r));
  return shape_[static_cast<size_t>(j)];
}

bool tensor::is_contiguous() const {
  int64_t expected = 1;
  for (size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] != 1 && strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

float* tensor::data() { return storage_ ? storage_.get() + offset_ : nullptr; }
const float* tensor::data() const { return storage_ ? storage_.get() + offset_ : nullptr; }

std::span<float> tensor::values() {
  if (!is_contiguous()) throw_usage("values() of a non-contiguous tensor");
  return {data(), static_cast<size_t>(numel())};
}
std::span<const float> tensor::values() const {
  if (!is_contiguous()) throw_usage("values() of a non-contiguous tensor");
  return {data(), static_cast<size_t>(numel())};
}

namespace {
int64_t element_offset(const shape_t& shape, const shape_t& strides,
                       std::initializer_list<int64_t> index) {
  if (index.size() != shape.size())
    throw_usage(fmt::format("index of rank {} into a tensor of rank {}", index.size(), shape.size()));
  int64_t at = 0;
  size_t axis = 0;
  for (int64_t i : index) {
    if (i < 0 || i >= shape[axis])
      throw_usage(fmt::format("index {} out of range on axis {} of shape {}", i, axis,
                              shape_to_string(shape)));
    at += i * strides[axis++];
  }
  return at;
}
}  // namespace

float& tensor::at(std::initializer_list<int64_t> index) {
  return data()[element_offset(shape_, strides_, index)];
}
float tensor::at(std::initializer_list<int64_t> index) const {
  return data()[element_offset(shape_, strides_, index)];
}

tensor tensor::clone() const {
  tensor out(shape_);
  if (empty()) return out;
  const int r = rank();
  const int64_t n = numel();
  float* dst = out.data();
  const float* src = data();
  // Walk the elements in row-major order with an odometer over the strides.
  shape_t index(static_cast<size_t>(r), 0);
  int64_t at = 0;
  for (int64_t i = 0; i < n; ++i) {
    dst[i] = src[at];
    for (int axis = r - 1; axis >= 0; --axis) {
      auto a = static_cast<size_t>(axis);
      if (++index[a] < shape_[a]) {
        at += strides_[a];
        break;
      }
      at -= strides_[a] * (shape_[a] - 1);
      index[a] = 0;
    }
  }
  return out;
}

tensor tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

tensor tensor::reshape(shape_t shape) const {
  int64_t known = 1;
  int inferred = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (inferred >= 0) throw_usage("reshape with more than one -1");
      inferred = static_cast<int>(i);
    } else {
      known *= shape[i];
    }
  }
  if (inferred >= 0) {
    if (known == 0 || numel() % known != 0)
      throw_usage("cannot reshape " + shape_to_string(shape_) + " to " + shape_to_string(shape));
    shape[static_cast<size_t>(inferred)] = numel() / known;
  }
  if (shape_numel(shape) != numel())
    throw_usage("cannot reshape " + shape_to_string(shape_) + " to " + shape_to_string(shape));
  tensor dense = contiguous();
  shape_t strides = contiguous_strides(shape);
  return tensor(dense.storage_, dense.offset_, std::move(shape), std::move(strides));
}

tensor tensor::transpose(int a, int b) const {
  int r = rank();
  if (a < 0) a += r;
  if (b < 0) b += r;
  if (a < 0 || a >= r || b < 0 || b >= r) throw_usage("transpose axis out of range");
  shape_t shape = shape_, strides = strides_;
  std::swap(shape[static_cast<size_t>(a)], shape[static_cast<size_t>(b)]);
  std::swap(strides[static_cast<size_t>(a)], strides[static_cast<size_t>(b)]);
  return tensor(storage_, offset_, std::move(shape), std::move(strides));
}

tensor tensor::slice(int axis, int64_t begin, int64_t end) const {
  int r = rank();
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) throw_usage("slice axis out of range");
  auto a = static_cast<size_t>(axis);
  if (begin < 0 || end < begin || end > shape_[a])
    throw_usage(fmt::format("slice [{}, {}) out of range for size {}", begin, end, shape_[a]));
  shape_t shape = shape_;
  shape[a] = end - begin;
  return tensor(storage_, offset_ + begin * strides_[a], std::move(shape), strides_);
}

std::string tensor::describe(const std::string& name) const {
  return name + " " + shape_to_string(shape_);
}

void check_rank(const tensor& t, int rank, const std::string& name) {
  if (t.rank() != rank)
    throw_usage(fmt::format("{} must have rank {}, got shape {}", name, rank,
                            shape_to_string(t.shape())));
}

void check_dim(const tensor& t, int axis, int64_t expected, const std::string& name) {
  if (t.dim(axis) != expected)
    throw_usage(fmt::format("{} has shape {}, expected size {} on axis {}", name,
                            shape_to_string(t.shape()), expected, axis));
}

}  // namespace attn
