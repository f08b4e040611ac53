#include "train/optimizer.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace attn::train {

adamw::adamw(const std::vector<nn::parameter<float>*>& params, adamw_options options)
    : options_(options) {
  for (nn::parameter<float>* p : params) {
    if (!p->trainable) continue;  // frozen: no moments (a 50,000-word table would triple)
    params_.push_back(p);
    m_.emplace_back(p->value.size(), 0.0f);
    v_.emplace_back(p->value.size(), 0.0f);
  }
}

void adamw::step(double lr) {
  ++t_;
  const double c1 = 1.0 - std::pow(options_.beta1, static_cast<double>(t_));
  const double c2 = 1.0 - std::pow(options_.beta2, static_cast<double>(t_));
  const auto b1 = static_cast<float>(options_.beta1), b2 = static_cast<float>(options_.beta2);
  for (size_t i = 0; i < params_.size(); ++i) {
    nn::parameter<float>& p = *params_[i];
    const float decay =
        p.decay ? static_cast<float>(1.0 - lr * options_.weight_decay) : 1.0f;
    const auto step_size = static_cast<float>(lr / c1);
    const auto inv_c2 = static_cast<float>(1.0 / c2);
    const auto eps = static_cast<float>(options_.eps);
    float* m = m_[i].data();
    float* v = v_[i].data();
    for (size_t j = 0; j < p.value.size(); ++j) {
      const float g = p.grad[j];
      m[j] = b1 * m[j] + (1.0f - b1) * g;
      v[j] = b2 * v[j] + (1.0f - b2) * g * g;
      p.value[j] = p.value[j] * decay - step_size * m[j] / (std::sqrt(v[j] * inv_c2) + eps);
    }
  }
}

double clip_gradients(const std::vector<nn::parameter<float>*>& params, double max_norm) {
  double sum = 0;
  for (const nn::parameter<float>* p : params)
    if (p->trainable)
      for (float g : p->grad) sum += static_cast<double>(g) * g;
  const double norm = std::sqrt(sum);
  if (max_norm > 0 && norm > max_norm) {
    const auto scale = static_cast<float>(max_norm / norm);
    for (nn::parameter<float>* p : params)
      if (p->trainable)
        for (float& g : p->grad) g *= scale;
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
