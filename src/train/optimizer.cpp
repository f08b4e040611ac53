#include "train/optimizer.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <utility>

#include "nn/parallel_elements.hpp"

namespace attn::train {

namespace {

// A step's work on the gradients, in pieces that threads can share: a dense parameter in runs of
// 4,096 elements, a row-sparse one row by row (only the rows a batch reached can be nonzero).
struct gradient_piece {
  size_t param, begin, end;
  int64_t row;  // the sparse row, or -1
};

std::vector<gradient_piece> gradient_pieces(const std::vector<nn::parameter<float>*>& params) {
  constexpr size_t run = 4096;
  std::vector<gradient_piece> pieces;
  for (size_t i = 0; i < params.size(); ++i) {
    const nn::parameter<float>& p = *params[i];
    if (!p.sparse()) {
      for (size_t b = 0; b < p.value.size(); b += run)
        pieces.push_back({i, b, std::min(p.value.size(), b + run), -1});
      continue;
    }
    const auto w = static_cast<size_t>(p.row_width);
    for (int64_t r : p.touched)
      pieces.push_back({i, static_cast<size_t>(r) * w, static_cast<size_t>(r + 1) * w, r});
  }
  return pieces;
}

int64_t elements_in(const std::vector<gradient_piece>& pieces) {
  int64_t n = 0;
  for (const gradient_piece& q : pieces) n += static_cast<int64_t>(q.end - q.begin);
  return n;
}

}  // namespace

adamw::adamw(const std::vector<nn::parameter<float>*>& params, adamw_options options)
    : options_(options) {
  lrs_.push_back(0.0);  // step 0: the initial weights
  step_sizes_.push_back(0.0f);
  inv_c2s_.push_back(0.0f);
  replay_steps_.push_back(0.0);
  for (nn::parameter<float>* p : params) {
    if (!p->trainable) continue;  // frozen: no moments (a 50,000-word table would triple)
    params_.push_back(p);
    m_.emplace_back(p->value.size(), 0.0f);
    v_.emplace_back(p->value.size(), 0.0f);
    done_.emplace_back(p->sparse() ? p->value.size() / static_cast<size_t>(p->row_width) : 0, 0);
  }
}

// Elements [begin, end) of parameter i take step t with their gradient.
void adamw::update_range(size_t i, size_t begin, size_t end, int64_t t) {
  nn::parameter<float>& p = *params_[i];
  const double lr = lrs_[static_cast<size_t>(t)];
  const auto b1 = static_cast<float>(options_.beta1), b2 = static_cast<float>(options_.beta2);
  const float decay = p.decay ? static_cast<float>(1.0 - lr * options_.weight_decay) : 1.0f;
  const float step_size = step_sizes_[static_cast<size_t>(t)];
  const float inv_c2 = inv_c2s_[static_cast<size_t>(t)];
  const auto eps = static_cast<float>(options_.eps);
  float* m = m_[i].data();
  float* v = v_[i].data();
  for (size_t j = begin; j < end; ++j) {
    const float g = p.grad[j];
    m[j] = b1 * m[j] + (1.0f - b1) * g;
    v[j] = b2 * v[j] + (1.0f - b2) * g * g;
    p.value[j] = p.value[j] * decay - step_size * m[j] / (std::sqrt(v[j] * inv_c2) + eps);
  }
}

void adamw::catch_up(size_t i, int64_t row, int64_t last) {
  nn::parameter<float>& p = *params_[i];
  int64_t& done = done_[i][static_cast<size_t>(row)];
  if (done >= last) return;
  // With a zero gradient, j steps after the row's last update its moments are β1^j·m and
  // β2^j·v, so step s moves it by step_size(s)·β1^j·m / √(β2^j·v / c2(s)) (ε aside):
  // a(s)·q^j·m/√v with q = β1/√β2 and a(s) = step_size(s)·√c2(s). Summed over the steps (each
  // also scaled by the later steps' weight decay, when the parameter has one), that is one
  // coefficient for the whole row. ε is left out of the replayed steps: it matters only for
  // gradients below 1e-8, far under float's resolution of the weights they move.
  const double q = options_.beta1 / std::sqrt(options_.beta2);
  const bool moving = done > 0;  // a row no batch reached yet has zero moments: it cannot move
  double coefficient = 0, weight_decay = 1, q_j = 1;
  for (int64_t s = done + 1; s <= last; ++s) {
    const double d = p.decay ? 1.0 - lrs_[static_cast<size_t>(s)] * options_.weight_decay : 1.0;
    weight_decay *= d;
    q_j *= q;
    coefficient = coefficient * d + (moving ? replay_steps_[static_cast<size_t>(s)] * q_j : 0.0);
    if (!p.decay && q_j < 1e-12) break;  // later steps add nothing a float can hold
  }
  const auto k = static_cast<double>(last - done);
  const auto m_decay = static_cast<float>(std::pow(options_.beta1, k));
  const auto v_decay = static_cast<float>(std::pow(options_.beta2, k));
  const auto w = static_cast<size_t>(p.row_width);
  float* m = m_[i].data();
  float* v = v_[i].data();
  for (size_t j = static_cast<size_t>(row) * w; j < static_cast<size_t>(row + 1) * w; ++j) {
    const double move = v[j] > 0 ? coefficient * m[j] / std::sqrt(static_cast<double>(v[j])) : 0.0;
    p.value[j] = static_cast<float>(weight_decay * p.value[j] - move);
    m[j] *= m_decay;
    v[j] *= v_decay;
  }
  done = last;
}

void adamw::step(double lr) {
  ++t_;
  // Adam's bias corrections for step t: the step size lr / (1 − β1^t) and 1 / (1 − β2^t).
  lrs_.push_back(lr);
  step_sizes_.push_back(static_cast<float>(lr / (1.0 - std::pow(options_.beta1, static_cast<double>(t_)))));
  inv_c2s_.push_back(static_cast<float>(1.0 / (1.0 - std::pow(options_.beta2, static_cast<double>(t_)))));
  replay_steps_.push_back(static_cast<double>(step_sizes_.back()) / std::sqrt(static_cast<double>(inv_c2s_.back())));
  // Every piece is its own elements' business, so the bits do not depend on the threads.
  const std::vector<gradient_piece> pieces = gradient_pieces(params_);
  const auto count = static_cast<int64_t>(pieces.size());
#pragma omp parallel for schedule(dynamic, 16) if (nn::worth_threads_elementwise(elements_in(pieces)))
  for (int64_t k = 0; k < count; ++k) {
    const gradient_piece& q = pieces[static_cast<size_t>(k)];
    if (q.row >= 0) catch_up(q.param, q.row, t_ - 1);
    update_range(q.param, q.begin, q.end, t_);
    if (q.row >= 0) done_[q.param][static_cast<size_t>(q.row)] = t_;
  }
}

void adamw::flush() {
  for (size_t i = 0; i < params_.size(); ++i)
    for (size_t r = 0; r < done_[i].size(); ++r) catch_up(i, static_cast<int64_t>(r), t_);
}

adamw::state adamw::save() const {
  return {m_, v_, done_, lrs_, replay_steps_, step_sizes_, inv_c2s_, t_};
}

void adamw::load(state s) {
  m_ = std::move(s.m);
  v_ = std::move(s.v);
  done_ = std::move(s.done);
  lrs_ = std::move(s.lrs);
  replay_steps_ = std::move(s.replay_steps);
  step_sizes_ = std::move(s.step_sizes);
  inv_c2s_ = std::move(s.inv_c2s);
  t_ = s.t;
}

double clip_gradients(const std::vector<nn::parameter<float>*>& params, double max_norm) {
  std::vector<nn::parameter<float>*> trainable;
  for (nn::parameter<float>* p : params)
    if (p->trainable) trainable.push_back(p);
  const std::vector<gradient_piece> pieces = gradient_pieces(trainable);
  const auto count = static_cast<int64_t>(pieces.size());
  const bool threads = nn::worth_threads_elementwise(elements_in(pieces));
  // Each piece's sum of squares alone (eight running sums, so the additions need not wait for
  // one another), then the pieces' sums in order: the same norm on any number of threads.
  std::vector<double> partial(pieces.size());
#pragma omp parallel for schedule(dynamic, 16) if (threads)
  for (int64_t k = 0; k < count; ++k) {
    const gradient_piece& q = pieces[static_cast<size_t>(k)];
    const float* g = trainable[q.param]->grad.data();
    double lanes[8] = {};
    size_t j = q.begin;
    for (; j + 8 <= q.end; j += 8)
      for (size_t l = 0; l < 8; ++l) lanes[l] += static_cast<double>(g[j + l]) * g[j + l];
    for (size_t l = 0; j < q.end; ++j, ++l) lanes[l] += static_cast<double>(g[j]) * g[j];
    partial[static_cast<size_t>(k)] = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
                                      ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
  }
  double sum = 0;
  for (double s : partial) sum += s;
  const double norm = std::sqrt(sum);
  if (max_norm > 0 && norm > max_norm) {
    const auto scale = static_cast<float>(max_norm / norm);
#pragma omp parallel for schedule(dynamic, 16) if (threads)
    for (int64_t k = 0; k < count; ++k) {
      const gradient_piece& q = pieces[static_cast<size_t>(k)];
      float* g = trainable[q.param]->grad.data();
      for (size_t j = q.begin; j < q.end; ++j) g[j] *= scale;
    }
  }
  return norm;
}

double learning_rate(int64_t step, int64_t total, int64_t warmup, double peak, double floor) {
  if (step < warmup) return peak * static_cast<double>(step + 1) / static_cast<double>(warmup);
  const int64_t decay_steps = std::max<int64_t>(1, total - warmup - 1);
  const double progress =
      std::clamp(static_cast<double>(step - warmup) / static_cast<double>(decay_steps), 0.0, 1.0);
  const double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
  return peak * (floor + (1.0 - floor) * cosine);
}

}  // namespace attn::train
