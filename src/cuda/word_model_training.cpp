// A word model's training step on the GPU (train/device_training.hpp): the masked-word and
// language models of src/models/ (tied_lm.hpp: trunk → each scored token's vector → tied output →
// softmax cross-entropy), layer by layer as the CPU runs them, forward and backward side by side:
//   the embedding rows (+ learned positions), dropout        training_kernels: embed_tokens, dropout_apply
//   each encoder layer, pre-norm or post-norm:
//     layer norm                                             training_kernels: layer_norm_*
//     Q, K, V in one product, the heads, flash attention     device_linear, rows_to_heads, flash_forward/backward
//     the out projection, the residual                       device_linear, add_bias
//     the feed-forward part (ReLU)                           device_linear, add_bias_relu
//   the final layer norm (pre-norm), the scored tokens' rows, dropout
//   the tied output: transform, scores against the output words' embedding rows + bias,
//     softmax cross-entropy fused with its gradient          device_linear, softmax_cross_entropy
// then clipping by the global norm and AdamW on one flat buffer of every gradient. float32 runs
// every product in float32 and the attention on the CUDA-core kernels; bf16 rounds the products'
// operands and the attention's heads to bf16 (float32 sums, float32 master weights, float32
// layer norms, softmax and optimiser: autocast's recipe).
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <numeric>

#include "attn/cuda.hpp"
#include "attn/error.hpp"
#include "cuda/cuda_problem.hpp"
#include "cuda/device_buffer.hpp"
#include "cuda/device_linear.hpp"
#include "cuda/training_kernels.hpp"
#include "models/tied_lm.hpp"
#include "train/device_training.hpp"

namespace attn::cuda::detail {

namespace {

namespace k = attn::cuda_kernels;

// A device array that grows to the largest size asked of it (batches vary a little in shape).
class device_array {
 public:
  float* floats(int64_t count) { return static_cast<float*>(bytes(count * 4)); }
  void* bytes(int64_t n) {
    if (n > capacity_) {
      buffer_.reset();  // (cudaFree waits for the work that may still read it)
      buffer_ = std::make_unique<device_buffer>(static_cast<size_t>(n));
      capacity_ = n;
    }
    return buffer_ ? buffer_->get() : nullptr;
  }
  float* get() const { return buffer_ ? buffer_->floats() : nullptr; }
  void* bytes_pointer() const { return buffer_ ? buffer_->get() : nullptr; }
  const int32_t* ints() const { return buffer_ ? static_cast<const int32_t*>(buffer_->get()) : nullptr; }

 private:
  std::unique_ptr<device_buffer> buffer_;
  int64_t capacity_ = 0;
};

// ATTN_CUDA_TRAIN_TIMES=1: each phase of the steps timed by CUDA events, summed and printed at the
// run's end (where the step's time goes, for tuning; off, no event is recorded).
class phase_times {
 public:
  static constexpr int phases = 5;
  explicit phase_times(cudaStream_t s) : stream_(s), on_(std::getenv("ATTN_CUDA_TRAIN_TIMES") != nullptr) {
    if (!on_) return;
    for (cudaEvent_t& e : events_) check(cudaEventCreate(&e), "cudaEventCreate");
  }
  ~phase_times() {
    if (!on_) return;
    static const char* const names[phases] = {"trunk forward", "output forward", "loss and output backward",
                                              "trunk backward", "clip and AdamW"};
    double all = 0;
    for (double t : total_) all += t;
    std::fprintf(stderr, "cuda training phases over %lld steps (ms a step):", static_cast<long long>(steps_));
    for (int i = 0; i < phases; ++i)
      std::fprintf(stderr, " %s %.3f (%.0f%%);", names[i], total_[i] / static_cast<double>(std::max<int64_t>(steps_, 1)),
                   all > 0 ? 100 * total_[i] / all : 0.0);
    std::fprintf(stderr, "\n");
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
  }
  // Marks the end of phase i (phase 0 starts at mark(-1)).
  void mark(int i) {
    if (on_) cudaEventRecord(events_[static_cast<size_t>(i + 1)], stream_);
  }
  // After a synchronised step: adds phases [first, last]'s times.
  void add(int first, int last) {
    if (!on_) return;
    cudaEventSynchronize(events_[static_cast<size_t>(last + 1)]);
    for (int i = first; i <= last; ++i) {
      float ms = 0;
      cudaEventElapsedTime(&ms, events_[static_cast<size_t>(i)], events_[static_cast<size_t>(i + 1)]);
      total_[static_cast<size_t>(i)] += ms;
    }
    if (last == phases - 1) ++steps_;
  }

 private:
  cudaStream_t stream_;
  bool on_;
  std::array<cudaEvent_t, phases + 1> events_{};
  std::array<double, phases> total_{};
  int64_t steps_ = 0;
};

// One parameter's place in the flat buffers of values, gradients and moments.
struct placed_parameter {
  nn::parameter<float>* host = nullptr;
  int64_t offset = 0, count = 0;
};

// What a layer's forward keeps for its backward. "P": in the products' element type (float32, or
// bf16 under --dtype bf16), the buffers that only feed products.
struct layer_state {
  device_array attention_in;  // P: the attention's input (pre-norm: LN₁(x); post-norm: x)
  device_array mean1, rstd1, q, k, v, o, lse;
  device_array merged;        // P: the heads concatenated
  device_array sum1;          // x + attention
  device_array h;             // P: the feed-forward part's input
  device_array h32;           // post-norm: LN₁(sum1) in float32 (the residual)
  device_array mean2, rstd2;
  device_array act;           // P: relu(h·W₁ᵀ + b₁)
  device_array sum2;          // post-norm: h + feed-forward
};

class word_model_training final : public train::device_training {
 public:
  word_model_training(models::tied_lm<float>& model, const train_options& o);
  ~word_model_training() override {
    times_.reset();
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    if (host_loss_ != nullptr) cudaFreeHost(host_loss_);
  }
  train::step_totals gradients(const nn::batch& b, uint64_t dropout_seed) override;
  void score(const nn::batch& b, train::score_tally& tally) override;
  void update(double lr, double max_norm) override;
  void download() override;
  double peak_flops() const override;
  std::string describe() const override {
    return fmt::format("{}, {}", device_name(), type_ == k::element::bf16 ? "bf16" : "float32");
  }

 private:
  float* value(const nn::parameter<float>& p) const { return values_.get() + placed_of(p).offset; }
  // The parameter in the products' type (the bf16 copy under bf16).
  const void* product(const nn::parameter<float>& p) const {
    if (type_ == k::element::float32) return value(p);
    return static_cast<const char*>(shadow_.bytes_pointer()) + placed_of(p).offset * 2;
  }
  float* grad(const nn::parameter<float>& p) const {
    return p.trainable ? grads_.get() + placed_of(p).offset : nullptr;
  }
  const placed_parameter& placed_of(const nn::parameter<float>& p) const;
  void place(nn::parameter<float>& p);
  void place_together(std::initializer_list<nn::parameter<float>*> group);
  // The weights' copy in the products' type, after each update.
  void refresh_shadow();
  int64_t product_bytes(int64_t count) const { return count * (type_ == k::element::bf16 ? 2 : 4); }
  // A float32 buffer in the products' type: itself under float32, else a bf16 copy in `to`.
  const void* as_product(const float* from, device_array& to, int64_t count);

  // Uploads the batch's ids and indices; sets B, L, N, R.
  void upload(const nn::batch& b);
  void trunk_forward(uint64_t dropout_seed);
  void trunk_backward(float* dy, uint64_t dropout_seed);
  void block_forward(int64_t layer, const float* in, float* out);
  void block_backward(int64_t layer, const float* in, const float* dout, float* din);
  // state.attention_in (P) → state.merged (P: the heads concatenated, before the out projection)
  void attention_forward(int64_t layer);
  // dsum [N, E], the gradient of the attention's output (after the out projection) → din
  // (written, or added to when accumulate); the attention's weight gradients +=.
  void attention_backward(int64_t layer, const float* dsum, float* din, bool accumulate);
  k::attention_problem problem(int64_t layer);
  // The batch (uploaded) → the logits [R, C] (P, without the bias) in logits_, through the trunk,
  // the scored tokens' rows and the tied output; returns the output words' table (P).
  const void* forward_to_logits(uint64_t dropout_seed);

  models::tied_lm<float>& model_;
  nn::network_shape shape_;
  k::element type_;
  double weight_decay_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<device_linear> linear_;
  std::unique_ptr<phase_times> times_;

  std::vector<placed_parameter> placed_;
  int64_t total_ = 0;  // floats in each flat buffer
  device_array values_, grads_, m_, v_, shadow_;
  int64_t step_ = 0;   // AdamW's t

  // The output words' rows: the embedding table itself when they are its rows in order.
  bool identity_output_ = false;
  bool output_rows_train_ = false;
  device_array output_rows_;  // int32 [C]

  // The batch.
  int64_t B = 0, L = 0, N = 0, R = 0, unique_ = 0;
  std::vector<int32_t> id_counts_;  // the counting sort's counts, then places
  device_array batch_ints_;  // ids [N], lengths [B], rows [R], targets [R], order, starts, unique ids
  const int32_t *ids_ = nullptr, *lengths_ = nullptr, *rows_ = nullptr, *targets_ = nullptr;
  const int32_t *order_ = nullptr, *starts_ = nullptr, *unique_ids_ = nullptr;

  // Activations: the residual stream before each layer and after the last, the final norm.
  std::vector<device_array> stream_x_;
  std::vector<layer_state> layers_;
  device_array y_, final_mean_, final_rstd_, mask_;
  device_array pooled32_, pooled_, hidden32_, hidden_, table32_, table_, logits_, row_loss_, row_rank_, loss_sum_;
  device_array dy_, dstream_;
  // Backward (and forward) scratch, shared by the layers.
  device_array qkv_, dmerged_, dheads_[4], ff32_, ff_, rows_p_, dh_, copy_;
  device_array column_workspace_, backward_workspace_, norm_workspace_, clip_scale_;
  double* host_loss_ = nullptr;
};

word_model_training::word_model_training(models::tied_lm<float>& model, const train_options& o)
    : model_(model),
      shape_(model.shape()),
      type_(o.dtype == train_dtype::bf16 ? k::element::bf16 : k::element::float32),
      weight_decay_(o.weight_decay) {
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cudaMallocHost(&host_loss_, sizeof(double)), "cudaMallocHost");
  linear_ = std::make_unique<device_linear>(stream_, type_ == k::element::bf16);
  times_ = std::make_unique<phase_times>(stream_);
  // The flat buffers: every parameter at a 64-float boundary; each layer's q, k and v weights
  // side by side with no gap (and their biases), so that one product makes Q, K and V.
  models::trunk<float>& t = model_.trunk;
  place(t.embedding);
  if (shape_.new_words > 0) place(t.new_words);
  if (shape_.positions > 0) place(t.position);
  for (nn::encoder_parameters<float>& l : t.layers) {
    place_together({&l.attention.wq, &l.attention.wk, &l.attention.wv});
    place_together({&l.attention.bq, &l.attention.bk, &l.attention.bv});
    for (nn::parameter<float>* p : {&l.attention.wo, &l.attention.bo, &l.norm1_weight, &l.norm1_bias,
                                    &l.linear1_weight, &l.linear1_bias, &l.linear2_weight, &l.linear2_bias,
                                    &l.norm2_weight, &l.norm2_bias})
      place(*p);
  }
  if (shape_.norm_first) {
    place(t.final_norm_weight);
    place(t.final_norm_bias);
  }
  models::tied_output<float>& out = model_.output;
  for (nn::parameter<float>* p : {&out.transform_weight, &out.transform_bias, &out.bias}) place(*p);
  // every parameter the model file holds must be on the device
  std::vector<nn::parameter<float>*> all;
  model_.append_parameters(all);
  if (all.size() != placed_.size())
    throw_usage("--device cuda: this model has parameters the GPU's training does not know");
  values_.floats(total_);
  grads_.floats(total_);
  m_.floats(total_);
  v_.floats(total_);
  for (device_array* a : {&values_, &grads_, &m_, &v_})
    check(cudaMemsetAsync(a->get(), 0, static_cast<size_t>(total_) * 4, stream_), "cudaMemset");
  for (const placed_parameter& p : placed_)
    check(cudaMemcpyAsync(values_.get() + p.offset, p.host->value.data(), static_cast<size_t>(p.count) * 4,
                          cudaMemcpyHostToDevice, stream_),
          "uploading the weights");
  refresh_shadow();
  // The output words' rows.
  const std::vector<int64_t>& rows = out.output_rows();
  identity_output_ = shape_.classes <= shape_.vocabulary;
  std::vector<int32_t> rows32(rows.size());
  std::vector<char> seen(static_cast<size_t>(shape_.vocabulary + shape_.new_words), 0);
  for (size_t c = 0; c < rows.size(); ++c) {
    if (rows[c] != static_cast<int64_t>(c)) identity_output_ = false;
    if (seen[static_cast<size_t>(rows[c])]++ != 0)
      throw_usage("--device cuda: an output word appears twice among the model's output rows");
    rows32[c] = static_cast<int32_t>(rows[c]);
    if (rows[c] >= shape_.vocabulary ? shape_.new_words > 0 : t.embedding.trainable) output_rows_train_ = true;
  }
  void* d = output_rows_.bytes(static_cast<int64_t>(rows32.size()) * 4);
  check(cudaMemcpyAsync(d, rows32.data(), rows32.size() * 4, cudaMemcpyHostToDevice, stream_), "uploading the rows");
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  layers_.resize(static_cast<size_t>(shape_.layers));
  stream_x_.resize(static_cast<size_t>(shape_.layers + 1));
}

void word_model_training::place(nn::parameter<float>& p) { place_together({&p}); }

void word_model_training::place_together(std::initializer_list<nn::parameter<float>*> group) {
  for (nn::parameter<float>* p : group) {
    placed_.push_back({p, total_, static_cast<int64_t>(p->value.size())});
    total_ += static_cast<int64_t>(p->value.size());
  }
  total_ = (total_ + 63) / 64 * 64;
}

void word_model_training::refresh_shadow() {
  if (type_ == k::element::float32) return;
  k::convert_from_float(type_, values_.get(), shadow_.bytes(total_ * 2), total_, stream_);
}

const void* word_model_training::as_product(const float* from, device_array& to, int64_t count) {
  if (type_ == k::element::float32) return from;
  void* out = to.bytes(count * 2);
  k::convert_from_float(type_, from, out, count, stream_);
  return out;
}

const placed_parameter& word_model_training::placed_of(const nn::parameter<float>& p) const {
  for (const placed_parameter& q : placed_)
    if (q.host == &p) return q;
  throw std::logic_error("a parameter not placed on the device");
}

void word_model_training::upload(const nn::batch& b) {
  B = b.size;
  L = b.length;
  N = B * L;
  R = static_cast<int64_t>(b.rows.size());
  if (L > shape_.positions && shape_.positions > 0) throw_usage("a batch longer than the model's positions");
  // The tokens grouped by id, each group in token order (the embedding's gradient sums each
  // row's tokens in order): a counting sort over the ids.
  const auto rows_total = static_cast<size_t>(shape_.vocabulary + shape_.new_words);
  id_counts_.assign(rows_total + 1, 0);
  for (int64_t id : b.ids)
    if (id >= 0) ++id_counts_[static_cast<size_t>(id) + 1];
  for (size_t id = 0; id < rows_total; ++id) id_counts_[id + 1] += id_counts_[id];  // id's group: [id, id + 1)
  std::vector<int32_t> starts, unique;
  for (size_t id = 0; id < rows_total; ++id)
    if (id_counts_[id + 1] > id_counts_[id]) {
      starts.push_back(id_counts_[id]);
      unique.push_back(static_cast<int32_t>(id));
    }
  std::vector<int32_t> order(static_cast<size_t>(id_counts_[rows_total]));
  for (int64_t i = 0; i < N; ++i)
    if (const int64_t id = b.ids[static_cast<size_t>(i)]; id >= 0)
      order[static_cast<size_t>(id_counts_[static_cast<size_t>(id)]++)] = static_cast<int32_t>(i);
  starts.push_back(static_cast<int32_t>(order.size()));
  unique_ = static_cast<int64_t>(unique.size());
  std::vector<int32_t> all;
  all.reserve(static_cast<size_t>(N + B + 2 * R) + order.size() + starts.size() + unique.size());
  for (int64_t id : b.ids) all.push_back(static_cast<int32_t>(id));
  for (int64_t l : b.lengths) all.push_back(static_cast<int32_t>(l));
  std::vector<char> scored(static_cast<size_t>(N), 0);
  for (const nn::pool_row& r : b.rows) {
    const int64_t at = r.sequence * L + r.count - 1;
    if (scored[static_cast<size_t>(at)]++ != 0) throw std::logic_error("a token scored twice in one batch");
    all.push_back(static_cast<int32_t>(at));
  }
  for (size_t r = 0; r < b.rows.size(); ++r)
    all.push_back(b.targets.size() == b.rows.size() ? static_cast<int32_t>(b.targets[r]) : -1);
  const size_t at_order = all.size();
  all.insert(all.end(), order.begin(), order.end());
  const size_t at_starts = all.size();
  all.insert(all.end(), starts.begin(), starts.end());
  const size_t at_unique = all.size();
  all.insert(all.end(), unique.begin(), unique.end());
  auto* d = static_cast<int32_t*>(batch_ints_.bytes(static_cast<int64_t>(all.size()) * 4));
  check(cudaMemcpyAsync(d, all.data(), all.size() * 4, cudaMemcpyHostToDevice, stream_), "uploading the batch");
  ids_ = d;
  lengths_ = d + N;
  rows_ = lengths_ + B;
  targets_ = rows_ + R;
  order_ = d + at_order;
  starts_ = d + at_starts;
  unique_ids_ = d + at_unique;
}

k::attention_problem word_model_training::problem(int64_t layer) {
  layer_state& c = layers_[static_cast<size_t>(layer)];
  const int64_t H = shape_.heads, D = shape_.width / H;
  const int64_t head_bytes = product_bytes(N * shape_.width);
  k::attention_problem p;
  p.B = B;
  p.H = p.Hkv = H;
  p.L = p.S = L;
  p.D = p.Dv = D;
  p.q = c.q.bytes(head_bytes);
  p.k = c.k.bytes(head_bytes);
  p.v = c.v.bytes(head_bytes);
  p.o = c.o.bytes(head_bytes);
  p.lse = c.lse.floats(B * H * L);
  p.causal = shape_.causal;
  if (!shape_.causal) {  // key padding: mask [B, 1, 1, S]
    p.mask = mask_.get();
    p.ms[0] = L;
    p.ms[3] = 1;
  }
  p.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(D)));
  p.type = type_;
  return p;
}

void word_model_training::attention_forward(int64_t layer) {
  nn::attention_parameters<float>& w = model_.trunk.layers[static_cast<size_t>(layer)].attention;
  layer_state& c = layers_[static_cast<size_t>(layer)];
  const int64_t E = shape_.width, H = shape_.heads, D = E / H;
  // [Q K V] = x·W_qkvᵀ (P), + b_qkv on the way to the heads
  void* qkv = qkv_.bytes(product_bytes(N * 3 * E));
  linear_->forward(c.attention_in.bytes_pointer(), product(w.wq), qkv, N, E, 3 * E, false, true);
  const k::attention_problem p = problem(layer);
  void* heads[3] = {const_cast<void*>(p.q), const_cast<void*>(p.k), const_cast<void*>(p.v)};
  k::rows_to_heads(qkv, true, value(w.bq), 3, heads, type_, B, L, H, D, stream_);
  k::flash_forward(p, stream_);
  const void* o[1] = {p.o};
  k::heads_to_rows(o, 1, c.merged.bytes(product_bytes(N * E)), type_, B, L, H, D, stream_);
}

void word_model_training::attention_backward(int64_t layer, const float* dsum, float* din, bool accumulate) {
  nn::attention_parameters<float>& w = model_.trunk.layers[static_cast<size_t>(layer)].attention;
  layer_state& c = layers_[static_cast<size_t>(layer)];
  const int64_t E = shape_.width, H = shape_.heads, D = E / H;
  float* ws = column_workspace_.get();
  // y = merged·Woᵀ + bo
  const void* dsum_p = as_product(dsum, rows_p_, N * E);
  linear_->backward_weight(dsum_p, c.merged.bytes_pointer(), grad(w.wo), N, E, E);
  k::column_sums(dsum, k::element::float32, grad(w.bo), ws, N, E, stream_);
  float* dmerged = dmerged_.floats(N * E);
  linear_->backward_input(dsum_p, product(w.wo), dmerged, N, E, E);
  // the heads: dO → dQ, dK, dV (flash backward, recomputing P from lse)
  const k::attention_problem p = problem(layer);
  void* dheads[4];
  for (int i = 0; i < 4; ++i) dheads[i] = dheads_[i].bytes(product_bytes(N * E));
  k::rows_to_heads(dmerged, false, nullptr, 1, &dheads[0], type_, B, L, H, D, stream_);
  k::attention_gradients g;
  g.grad_o = dheads[0];
  g.dq = dheads[1];
  g.dk = dheads[2];
  g.dv = dheads[3];
  k::flash_backward(p, g, backward_workspace_.floats(B * H * L), stream_);
  void* dqkv = qkv_.bytes(product_bytes(N * 3 * E));
  const void* parts[3] = {dheads[1], dheads[2], dheads[3]};
  k::heads_to_rows(parts, 3, dqkv, type_, B, L, H, D, stream_);
  // qkv = in·W_qkvᵀ + b_qkv
  linear_->backward_weight(dqkv, c.attention_in.bytes_pointer(), grad(w.wq), N, E, 3 * E);
  k::column_sums(dqkv, type_, grad(w.bq), ws, N, 3 * E, stream_);
  linear_->backward_input(dqkv, product(w.wq), din, N, E, 3 * E, accumulate);
}

void word_model_training::block_forward(int64_t layer, const float* in, float* out) {
  nn::encoder_parameters<float>& w = model_.trunk.layers[static_cast<size_t>(layer)];
  layer_state& c = layers_[static_cast<size_t>(layer)];
  const int64_t E = shape_.width, F = shape_.feedforward;
  float* sum1 = c.sum1.floats(N * E);
  void* h = c.h.bytes(product_bytes(N * E));
  void* pre = ff_.bytes(product_bytes(N * F));
  void* act = c.act.bytes(product_bytes(N * F));
  const auto feed_forward = [&](float* to, const float* residual) {  // to = residual + W₂·relu(W₁·h + b₁) + b₂
    linear_->forward(h, product(w.linear1_weight), pre, N, E, F, false, true);
    k::bias_relu(pre, value(w.linear1_bias), act, type_, N, F, stream_);
    linear_->forward(act, product(w.linear2_weight), to, N, F, E);
    k::add_bias(to, value(w.linear2_bias), residual, N, E, stream_);
  };
  if (shape_.norm_first) {
    // normed = LN₁(x); sum1 = x + attention(normed); h = LN₂(sum1); y = sum1 + feed-forward(h)
    k::layer_norm_forward(in, value(w.norm1_weight), value(w.norm1_bias), nullptr,
                          c.attention_in.bytes(product_bytes(N * E)), type_, c.mean1.floats(N), c.rstd1.floats(N), N,
                          E, stream_);
    attention_forward(layer);
    linear_->forward(c.merged.bytes_pointer(), product(w.attention.wo), sum1, N, E, E);
    k::add_bias(sum1, value(w.attention.bo), in, N, E, stream_);
    k::layer_norm_forward(sum1, value(w.norm2_weight), value(w.norm2_bias), nullptr, h, type_, c.mean2.floats(N),
                          c.rstd2.floats(N), N, E, stream_);
    feed_forward(out, sum1);
    return;
  }
  // sum1 = x + attention(x); h = LN₁(sum1); sum2 = h + feed-forward(h); y = LN₂(sum2)
  const void* in_p = as_product(in, c.attention_in, N * E);
  if (type_ == k::element::float32)  // (the attention reads its input from the state)
    check(cudaMemcpyAsync(c.attention_in.bytes(N * E * 4), in_p, static_cast<size_t>(N * E) * 4,
                          cudaMemcpyDeviceToDevice, stream_),
          "cudaMemcpy");
  attention_forward(layer);
  linear_->forward(c.merged.bytes_pointer(), product(w.attention.wo), sum1, N, E, E);
  k::add_bias(sum1, value(w.attention.bo), in, N, E, stream_);
  float* h32 = c.h32.floats(N * E);
  k::layer_norm_forward(sum1, value(w.norm1_weight), value(w.norm1_bias), h32,
                        type_ == k::element::float32 ? nullptr : h, type_, c.mean1.floats(N), c.rstd1.floats(N), N, E,
                        stream_);
  if (type_ == k::element::float32) h = h32;
  float* sum2 = c.sum2.floats(N * E);
  feed_forward(sum2, h32);
  k::layer_norm_forward(sum2, value(w.norm2_weight), value(w.norm2_bias), out, nullptr, type_, c.mean2.floats(N),
                        c.rstd2.floats(N), N, E, stream_);
}

void word_model_training::block_backward(int64_t layer, const float* in, const float* dout, float* din) {
  nn::encoder_parameters<float>& w = model_.trunk.layers[static_cast<size_t>(layer)];
  layer_state& c = layers_[static_cast<size_t>(layer)];
  const int64_t E = shape_.width, F = shape_.feedforward;
  float* ws = column_workspace_.get();
  void* dact = ff32_.bytes(product_bytes(N * F));  // (in the products' type, as autocast's)
  void* dpre = ff_.bytes(product_bytes(N * F));
  const void* h = type_ == k::element::float32 && !shape_.norm_first ? c.h32.bytes_pointer() : c.h.bytes_pointer();
  const auto bytes = static_cast<size_t>(N * E) * 4;
  // to = residual + W₂·relu(W₁·h + b₁) + b₂, backward from its gradient d: dh (written, or added
  // to when accumulate), the weights' gradients +=
  const auto feed_forward_backward = [&](const float* d, float* dh, bool accumulate) {
    const void* d_p = as_product(d, rows_p_, N * E);
    linear_->backward_weight(d_p, c.act.bytes_pointer(), grad(w.linear2_weight), N, F, E);
    k::column_sums(d, k::element::float32, grad(w.linear2_bias), ws, N, E, stream_);
    linear_->backward_input(d_p, product(w.linear2_weight), dact, N, F, E, false, true);
    k::relu_backward(dact, c.act.bytes_pointer(), dpre, type_, N * F, stream_);
    linear_->backward_weight(dpre, h, grad(w.linear1_weight), N, E, F);
    k::column_sums(dpre, type_, grad(w.linear1_bias), ws, N, F, stream_);
    linear_->backward_input(dpre, product(w.linear1_weight), dh, N, E, F, accumulate);
  };
  if (shape_.norm_first) {
    float* dh = dh_.floats(N * E);
    feed_forward_backward(dout, dh, false);
    // dsum1 = dy + LN₂'s backward of dh (din collects dsum1, then x's gradient)
    float* dsum1 = din;
    check(cudaMemcpyAsync(dsum1, dout, bytes, cudaMemcpyDeviceToDevice, stream_), "cudaMemcpy");
    k::layer_norm_backward_input(dh, c.sum1.get(), value(w.norm2_weight), c.mean2.get(), c.rstd2.get(), dsum1, true,
                                 N, E, stream_);
    k::layer_norm_backward_weights(dh, c.sum1.get(), c.mean2.get(), c.rstd2.get(), grad(w.norm2_weight),
                                   grad(w.norm2_bias), ws, N, E, stream_);
    // sum1 = x + attention(normed): dx = dsum1 + LN₁'s backward of dnormed
    float* dnormed = dh;  // (dh is read no more)
    attention_backward(layer, dsum1, dnormed, false);
    k::layer_norm_backward_input(dnormed, in, value(w.norm1_weight), c.mean1.get(), c.rstd1.get(), din, true, N, E,
                                 stream_);
    k::layer_norm_backward_weights(dnormed, in, c.mean1.get(), c.rstd1.get(), grad(w.norm1_weight),
                                   grad(w.norm1_bias), ws, N, E, stream_);
    return;
  }
  // y = LN₂(sum2)
  float* dsum2 = din;
  k::layer_norm_backward_input(dout, c.sum2.get(), value(w.norm2_weight), c.mean2.get(), c.rstd2.get(), dsum2, false,
                               N, E, stream_);
  k::layer_norm_backward_weights(dout, c.sum2.get(), c.mean2.get(), c.rstd2.get(), grad(w.norm2_weight),
                                 grad(w.norm2_bias), ws, N, E, stream_);
  // sum2 = h + feed-forward(h): dh = dsum2 + the feed-forward part's backward
  float* dh = dh_.floats(N * E);
  check(cudaMemcpyAsync(dh, dsum2, bytes, cudaMemcpyDeviceToDevice, stream_), "cudaMemcpy");
  feed_forward_backward(dsum2, dh, true);
  // h = LN₁(sum1)
  float* dsum1 = copy_.floats(N * E);
  k::layer_norm_backward_input(dh, c.sum1.get(), value(w.norm1_weight), c.mean1.get(), c.rstd1.get(), dsum1, false, N,
                               E, stream_);
  k::layer_norm_backward_weights(dh, c.sum1.get(), c.mean1.get(), c.rstd1.get(), grad(w.norm1_weight),
                                 grad(w.norm1_bias), ws, N, E, stream_);
  // sum1 = x + attention(x): dx = dsum1 + the attention's backward
  check(cudaMemcpyAsync(din, dsum1, bytes, cudaMemcpyDeviceToDevice, stream_), "cudaMemcpy");
  attention_backward(layer, dsum1, din, true);
}

void word_model_training::trunk_forward(uint64_t dropout_seed) {
  models::trunk<float>& t = model_.trunk;
  const int64_t E = shape_.width;
  for (device_array& x : stream_x_) x.floats(N * E);
  float* x0 = stream_x_[0].get();
  k::embed_tokens(ids_, value(t.embedding), shape_.vocabulary, shape_.new_words > 0 ? value(t.new_words) : nullptr,
                  shape_.positions > 0 ? value(t.position) : nullptr, x0, N, L, E, stream_);
  if (dropout_seed != 0 && shape_.dropout > 0) k::dropout_apply(dropout_seed, shape_.dropout, x0, N * E, stream_);
  if (!shape_.causal) k::padding_mask(lengths_, mask_.floats(B * L), B, L, stream_);
  for (int64_t i = 0; i < shape_.layers; ++i)
    block_forward(i, stream_x_[static_cast<size_t>(i)].get(), stream_x_[static_cast<size_t>(i + 1)].get());
  float* last = stream_x_.back().get();
  if (shape_.norm_first)
    k::layer_norm_forward(last, value(t.final_norm_weight), value(t.final_norm_bias), y_.floats(N * E), nullptr,
                          type_, final_mean_.floats(N), final_rstd_.floats(N), N, E, stream_);
}

void word_model_training::trunk_backward(float* dy, uint64_t dropout_seed) {
  models::trunk<float>& t = model_.trunk;
  const int64_t E = shape_.width;
  // two buffers for the residual stream's gradient, apart from the blocks' scratch
  float* buffers[2] = {dy, dstream_.floats(N * E)};
  if (shape_.norm_first) {  // y = LN(stack)
    k::layer_norm_backward_input(dy, stream_x_.back().get(), value(t.final_norm_weight), final_mean_.get(),
                                 final_rstd_.get(), buffers[1], false, N, E, stream_);
    k::layer_norm_backward_weights(dy, stream_x_.back().get(), final_mean_.get(), final_rstd_.get(),
                                   grad(t.final_norm_weight), grad(t.final_norm_bias), column_workspace_.get(), N, E,
                                   stream_);
    std::swap(buffers[0], buffers[1]);
  }
  for (int64_t i = shape_.layers - 1; i >= 0; --i) {
    block_backward(i, stream_x_[static_cast<size_t>(i)].get(), buffers[0], buffers[1]);
    std::swap(buffers[0], buffers[1]);
  }
  float* dx = buffers[0];
  // x = dropout(embedding[ids] + position[t])
  if (dropout_seed != 0 && shape_.dropout > 0) k::dropout_apply(dropout_seed, shape_.dropout, dx, N * E, stream_);
  if (shape_.positions > 0) k::positions_backward(dx, grad(t.position), B, L, E, stream_);
  k::embed_tokens_backward(dx, order_, starts_, unique_ids_, unique_, grad(t.embedding), shape_.vocabulary,
                           shape_.new_words > 0 ? grad(t.new_words) : nullptr, E, stream_);
}

const void* word_model_training::forward_to_logits(uint64_t dropout_seed) {
  const int64_t E = shape_.width, Ein = shape_.embed, C = shape_.classes;
  column_workspace_.floats(k::column_workspace(std::max({E * 3, shape_.feedforward, C, Ein})));
  times_->mark(-1);
  trunk_forward(dropout_seed);
  times_->mark(0);
  const float* y = shape_.norm_first ? y_.get() : stream_x_.back().get();
  models::tied_output<float>& out = model_.output;
  models::trunk<float>& t = model_.trunk;
  // each scored token's vector, dropped out (~seed: a mask apart from the embeddings')
  float* pooled32 = pooled32_.floats(R * E);
  k::gather_token_rows(y, rows_, pooled32, R, E, stream_);
  if (dropout_seed != 0 && shape_.dropout > 0)
    k::dropout_apply(~dropout_seed, shape_.dropout, pooled32, R * E, stream_);
  const void* pooled = as_product(pooled32, pooled_, R * E);
  // hidden = pooled·Wᵀ + b; logits = hidden·tableᵀ (the bias joins in the loss's kernel)
  float* hidden32 = hidden32_.floats(R * Ein);
  linear_->forward(pooled, product(out.transform_weight), hidden32, R, E, Ein);
  k::add_bias(hidden32, value(out.transform_bias), nullptr, R, Ein, stream_);
  as_product(hidden32, hidden_, R * Ein);
  const void* table = product(t.embedding);
  if (!identity_output_) {
    float* gathered = table32_.floats(C * Ein);
    k::gather_rows(value(t.embedding), shape_.vocabulary, shape_.new_words > 0 ? value(t.new_words) : nullptr,
                   output_rows_.ints(), gathered, C, Ein, stream_);
    table = as_product(gathered, table_, C * Ein);
  }
  linear_->forward(type_ == k::element::float32 ? hidden32 : hidden_.bytes_pointer(), table,
                   logits_.bytes(product_bytes(R * C)), R, Ein, C, false, true);
  times_->mark(1);
  return table;
}

void word_model_training::score(const nn::batch& b, train::score_tally& tally) {
  if (b.rows.empty()) return;
  std::vector<float> loss(b.rows.size());
  std::vector<int32_t> rank(b.rows.size());
  run_kernels([&] {
    upload(b);
    forward_to_logits(0);
    float* row_loss = row_loss_.floats(R);
    auto* row_rank = static_cast<int32_t*>(row_rank_.bytes(R * 4));
    k::score_rows(logits_.bytes_pointer(), type_, value(model_.output.bias), targets_, row_loss, row_rank, R,
                  shape_.classes, stream_);
    check(cudaMemcpyAsync(loss.data(), row_loss, loss.size() * 4, cudaMemcpyDeviceToHost, stream_), "the scores");
    check(cudaMemcpyAsync(rank.data(), row_rank, rank.size() * 4, cudaMemcpyDeviceToHost, stream_), "the scores");
    check(cudaStreamSynchronize(stream_), "scoring held-out text");
  });
  // as score_tally::add: the batch's mean loss (float) times its rows
  double sum = 0;
  for (float x : loss) sum += static_cast<double>(x);
  tally.loss_sum += static_cast<double>(static_cast<float>(sum / static_cast<double>(R))) * static_cast<double>(R);
  for (int32_t r : rank) {
    tally.correct += r == 0 ? 1 : 0;
    tally.in_top5 += r >= 0 && r < 5 ? 1 : 0;
  }
  tally.n += R;
}

train::step_totals word_model_training::gradients(const nn::batch& b, uint64_t dropout_seed) {
  check(cudaMemsetAsync(grads_.get(), 0, static_cast<size_t>(total_) * 4, stream_), "cudaMemset");
  train::step_totals totals{0.0, static_cast<int64_t>(b.rows.size()), b.tokens()};
  if (b.rows.empty()) return totals;
  run_kernels([&] {
    upload(b);
    const int64_t E = shape_.width, Ein = shape_.embed, C = shape_.classes;
    const void* table = forward_to_logits(dropout_seed);
    models::tied_output<float>& out = model_.output;
    models::trunk<float>& t = model_.trunk;
    void* dlogits = logits_.bytes_pointer();
    const void* pooled = type_ == k::element::float32 ? pooled32_.bytes_pointer() : pooled_.bytes_pointer();
    const void* hidden = type_ == k::element::float32 ? hidden32_.bytes_pointer() : hidden_.bytes_pointer();
    // the mean cross-entropy over the rows, and its gradient in place of the logits
    k::softmax_cross_entropy(dlogits, type_, value(out.bias), targets_, row_loss_.floats(R),
                             1.0f / static_cast<float>(R), R, C, stream_);
    k::sum_rows_loss(row_loss_.get(), R, static_cast<double*>(loss_sum_.bytes(8)), stream_);
    check(cudaMemcpyAsync(host_loss_, loss_sum_.get(), sizeof(double), cudaMemcpyDeviceToHost, stream_),
          "reading the loss");
    // backward: the bias, the hidden rows, the output words' rows
    float* ws = column_workspace_.get();
    k::column_sums(dlogits, type_, grad(out.bias), ws, R, C, stream_);
    float* dhidden = dh_.floats(R * Ein);
    linear_->backward_input(dlogits, table, dhidden, R, Ein, C);
    if (output_rows_train_) {
      if (identity_output_) {
        linear_->backward_weight(dlogits, hidden, grad(t.embedding), R, Ein, C);
      } else {
        float* dtable = table32_.floats(C * Ein);  // (the gathered rows are read no more)
        check(cudaMemsetAsync(dtable, 0, static_cast<size_t>(C * Ein) * 4, stream_), "cudaMemset");
        linear_->backward_weight(dlogits, hidden, dtable, R, Ein, C);
        k::scatter_add_rows(dtable, output_rows_.ints(), grad(t.embedding), shape_.vocabulary,
                            shape_.new_words > 0 ? grad(t.new_words) : nullptr, C, Ein, stream_);
      }
    }
    // hidden = pooled·Wᵀ + b
    const void* dhidden_p = as_product(dhidden, rows_p_, R * Ein);
    linear_->backward_weight(dhidden_p, pooled, grad(out.transform_weight), R, E, Ein);
    k::column_sums(dhidden, k::element::float32, grad(out.transform_bias), ws, R, Ein, stream_);
    float* dpooled = dmerged_.floats(R * E);
    linear_->backward_input(dhidden_p, product(out.transform_weight), dpooled, R, E, Ein);
    if (dropout_seed != 0 && shape_.dropout > 0)
      k::dropout_apply(~dropout_seed, shape_.dropout, dpooled, R * E, stream_);
    float* dy = dy_.floats(N * E);
    check(cudaMemsetAsync(dy, 0, static_cast<size_t>(N * E) * 4, stream_), "cudaMemset");
    k::scatter_token_rows(dpooled, rows_, dy, R, E, stream_);
    times_->mark(2);
    trunk_backward(dy, dropout_seed);
    times_->mark(3);
    check(cudaStreamSynchronize(stream_), "the training step");
    times_->add(0, 3);
  });
  totals.loss_sum = *host_loss_;
  return totals;
}

void word_model_training::update(double lr, double max_norm) {
  ++step_;
  const double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // train::adamw_options' defaults
  const auto step_size = static_cast<float>(lr / (1.0 - std::pow(beta1, static_cast<double>(step_))));
  const auto inv_c2 = static_cast<float>(1.0 / (1.0 - std::pow(beta2, static_cast<double>(step_))));
  run_kernels([&] {
    times_->mark(3);  // (the phase starts where the step's gradient ended)
    float* scale = clip_scale_.floats(1);
    k::clip_scale(grads_.get(), total_, max_norm, static_cast<double*>(norm_workspace_.bytes(1024 * 8)), scale,
                  stream_);
    for (const placed_parameter& p : placed_) {
      if (!p.host->trainable) continue;
      const float decay = p.host->decay ? static_cast<float>(1.0 - lr * weight_decay_) : 1.0f;
      k::adamw_update(values_.get() + p.offset, grads_.get() + p.offset, m_.get() + p.offset, v_.get() + p.offset,
                      p.count, scale, decay, step_size, inv_c2, static_cast<float>(beta1), static_cast<float>(beta2),
                      static_cast<float>(eps), stream_);
    }
    refresh_shadow();
    times_->mark(4);
  });
  times_->add(4, 4);
}

void word_model_training::download() {
  for (const placed_parameter& p : placed_)
    check(cudaMemcpyAsync(p.host->value.data(), values_.get() + p.offset, static_cast<size_t>(p.count) * 4,
                          cudaMemcpyDeviceToHost, stream_),
          "downloading the weights");
  check(cudaStreamSynchronize(stream_), "downloading the weights");
}

// Dense multiply-adds a multiprocessor retires each clock, times two: bf16 on the tensor cores
// (Hopper 4,096 FLOP a clock, Ampere 2,048: 989 and 312 TFLOP/s on an H100 SXM and an A100),
// float32 on the CUDA cores (128 lanes: 256).
double word_model_training::peak_flops() const {
  int device = 0, major = 0, sms = 0, khz = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device) != cudaSuccess)
    return 0.0;
  double per_clock = 256.0;
  if (type_ == k::element::bf16) per_clock = major >= 9 ? 4096.0 : major == 8 ? 2048.0 : 0.0;
  return per_clock * sms * khz * 1e3;
}

}  // namespace

}  // namespace attn::cuda::detail

namespace attn::train {

std::unique_ptr<device_training> make_cuda_training(models::network<float>& net, const train_options& o) {
  cuda::detail::require_device();
  models::tied_lm<float>* model = net.as<models::causal_lm<float>>();
  if (model == nullptr) model = net.as<models::masked_lm<float>>();
  if (model == nullptr) throw_usage("--device cuda trains the word models (--task lm, masked-word)");
  const nn::network_shape& s = model->shape();
  if (s.layers == 0) throw_usage("--device cuda trains encoder layers (--layers 1 or more)");
  if (s.window > 0) throw_usage("--device cuda does not run the word window (--window 0)");
  if (s.pool != nn::pool_kind::token || !s.tied_output) throw_usage("--device cuda trains the word models' tied output");
  if (model->output.adaptive()) throw_usage("--device cuda runs the full softmax (no --adaptive-softmax)");
  if (s.embed != s.width) throw_usage("--device cuda needs the embedding width equal to --dim");
  return std::make_unique<cuda::detail::word_model_training>(*model, o);
}

}  // namespace attn::train
