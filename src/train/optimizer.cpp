#include "train/optimizer.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <utility>

namespace attn::train {

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
  for (size_t i = 0; i < params_.size(); ++i) {
    nn::parameter<float>& p = *params_[i];
    if (!p.sparse()) {
      update_range(i, 0, p.value.size(), t_);
      continue;
    }
    const auto w = static_cast<size_t>(p.row_width);
    for (int64_t r : p.touched) {
      catch_up(i, r, t_ - 1);
      update_range(i, static_cast<size_t>(r) * w, static_cast<size_t>(r + 1) * w, t_);
      done_[i][static_cast<size_t>(r)] = t_;
    }
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
  // Row-sparse parameters: the rows outside touched are zero and add nothing.
  const auto each_row = [](auto& p, auto&& f) {
    if (!p.sparse()) {
      f(p.grad.data(), p.grad.size());
      return;
    }
    const auto w = static_cast<size_t>(p.row_width);
    for (int64_t r : p.touched) f(p.grad.data() + static_cast<size_t>(r) * w, w);
  };
  double sum = 0;
  for (const nn::parameter<float>* p : params)
    if (p->trainable)
      each_row(std::as_const(*p), [&](const float* g, size_t n) {
        for (size_t j = 0; j < n; ++j) sum += static_cast<double>(g[j]) * g[j];
      });
  const double norm = std::sqrt(sum);
  if (max_norm > 0 && norm > max_norm) {
    const auto scale = static_cast<float>(max_norm / norm);
    for (nn::parameter<float>* p : params)
      if (p->trainable)
        each_row(*p, [&](float* g, size_t n) {
          for (size_t j = 0; j < n; ++j) g[j] *= scale;
        });
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
