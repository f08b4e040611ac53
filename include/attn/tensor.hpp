// attn::tensor — float32 values with a shape and strides (in elements), sharing storage on copy.
// Views (transpose, slices) share storage; contiguous() makes a dense row-major copy.
// tensor::view wraps memory the caller owns, without copying it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace attn {

using shape_t = std::vector<int64_t>;

std::string shape_to_string(const shape_t& shape);  // "[2, 3, 4]"
int64_t shape_numel(const shape_t& shape);          // throws on negative or overflowing sizes

class tensor {
 public:
  tensor() = default;                                   // rank 0, no storage: empty()
  explicit tensor(shape_t shape, float fill = 0.0f);    // dense, row-major
  // Dense, row-major, values left unset (like torch.empty): for outputs a kernel writes in
  // full, where filling first would be a pass over memory for nothing.
  static tensor uninitialized(shape_t shape);
  tensor(shape_t shape, std::vector<float> values);     // values.size() must equal numel
  // A view of existing storage (used for strided views).
  tensor(std::shared_ptr<std::vector<float>> storage, int64_t offset, shape_t shape,
         shape_t strides);
  // A view of storage whose lifetime `base` manages (or, with an owner-less pointer, nobody).
  tensor(std::shared_ptr<float> base, int64_t offset, shape_t shape, shape_t strides);

  // A row-major view of numel(shape) floats at `data`, memory the caller owns (like PyTorch's
  // from_blob): no copy, no ownership. The memory must outlive the tensor and every view or
  // copy of it.
  static tensor view(float* data, shape_t shape);
  // The same over read-only memory: attn's functions take inputs as const tensor& and never
  // write them, so this is how to pass a const buffer. Writing through the result is undefined.
  static tensor view(const float* data, shape_t shape);

  bool empty() const { return storage_ == nullptr; }
  int rank() const { return static_cast<int>(shape_.size()); }
  const shape_t& shape() const { return shape_; }
  const shape_t& strides() const { return strides_; }
  int64_t dim(int i) const;  // negative i counts from the end
  int64_t numel() const { return shape_numel(shape_); }
  bool is_contiguous() const;

  // Pointer to element [0,…,0]; for a contiguous tensor the values follow row-major.
  float* data();
  const float* data() const;
  // Only for contiguous tensors: all values in row-major order.
  std::span<float> values();
  std::span<const float> values() const;

  // Element access with bounds checks (slow path; kernels use data() and strides()).
  float& at(std::initializer_list<int64_t> index);
  float at(std::initializer_list<int64_t> index) const;

  tensor contiguous() const;                 // dense copy (or *this when already dense)
  tensor clone() const;                      // always a fresh dense copy
  tensor reshape(shape_t shape) const;       // contiguous tensors only; one -1 allowed
  tensor transpose(int a, int b) const;      // a strided view
  tensor slice(int axis, int64_t begin, int64_t end) const;  // a view of [begin, end) on axis

  // "q" → "q [2, 3, 4]" for messages.
  std::string describe(const std::string& name) const;

 private:
  // Element 0 of the storage; an aliasing shared_ptr, so the owner may be a std::vector, the
  // caller's object, or nothing (a view of caller memory).
  std::shared_ptr<float> storage_;
  int64_t offset_ = 0;
  shape_t shape_, strides_;
};

shape_t contiguous_strides(const shape_t& shape);

// Checks used by every layer: throw a usage error naming the tensor when the shape is off.
void check_rank(const tensor& t, int rank, const std::string& name);
void check_dim(const tensor& t, int axis, int64_t expected, const std::string& name);

}  // namespace attn
