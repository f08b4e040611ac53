// The adaptive softmax's forward and backward (adaptive_output.hpp), built from the full
// softmax's parts: the head and each cluster are a linear map and a softmax cross-entropy of
// their own (linear_layer.hpp, cross_entropy.hpp), on rows gathered for them.
#include "nn/adaptive_output.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/exp_nonpositive.hpp"
#include "nn/cross_entropy.hpp"
#include "nn/linear_layer.hpp"

namespace attn::nn {

int64_t adaptive_cuts::cluster_of(int64_t c) const {
  if (c < cutoffs.front() || c >= cutoffs.back()) return -1;
  return static_cast<int64_t>(std::upper_bound(cutoffs.begin(), cutoffs.end(), c) - cutoffs.begin()) - 1;
}

int64_t adaptive_cuts::head_index(int64_t c) const {
  const int64_t first = cutoffs.front(), last = cutoffs.back();
  if (c < first) return c;
  if (c >= last) return first + (c - last);
  return first + (classes - last) + cluster_of(c);
}

namespace {

// The head's entries in order from the class table and the token rows (rows of `width` values;
// width 1 gathers the biases).
template <class T>
void gather_head(const T* classes, const T* tokens, const adaptive_cuts& cuts, int64_t width, T* head) {
  const int64_t first = cuts.cutoffs.front(), last = cuts.cutoffs.back();
  T* out = std::copy_n(classes, first * width, head);
  out = std::copy_n(classes + last * width, (cuts.classes - last) * width, out);
  std::copy_n(tokens, cuts.clusters() * width, out);
}

// The reverse: each head entry's gradient added to its class's (classes null: skipped) or token's.
template <class T>
void scatter_head(const T* head, const adaptive_cuts& cuts, int64_t width, T* classes, T* tokens) {
  const int64_t first = cuts.cutoffs.front(), last = cuts.cutoffs.back(), tail = cuts.classes - last;
  const auto add = [&](const T* from, int64_t n, T* to) {
    for (int64_t j = 0; j < n * width; ++j) to[j] += from[j];
  };
  if (classes != nullptr) {
    add(head, first, classes);
    add(head + first * width, tail, classes + last * width);
  }
  add(head + (first + tail) * width, cuts.clusters(), tokens);
}

inline double exp_shifted(double x) { return std::exp(x); }
inline float exp_shifted(float x) { return kernels::exp_nonpositive(x); }

template <class T>
T run_max(const T* z, int64_t n, T top) {
#pragma omp simd reduction(max : top)
  for (int64_t j = 0; j < n; ++j) top = top > z[j] ? top : z[j];
  return top;
}

template <class T>
T run_exp_sum(const T* z, int64_t n, T top) {
  T sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < n; ++j) sum += exp_shifted(z[j] - top);
  return sum;
}

template <class T>
void run_add(T* z, int64_t n, T shift) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) z[j] += shift;
}

}  // namespace

template <class T>
T adaptive_output_forward(const T* hidden, const T* table, const T* bias, const T* token_weight,
                          const T* token_bias, const int64_t* targets, int64_t rows, int64_t width,
                          const adaptive_cuts& cuts, adaptive_output_cache<T>& c, bool bf16) {
  const int64_t h = cuts.head(), k_count = cuts.clusters();
  c.head_table.resize(static_cast<size_t>(h * width));
  c.head_bias.resize(static_cast<size_t>(h));
  gather_head(table, token_weight, cuts, width, c.head_table.data());
  gather_head(bias, token_bias, cuts, 1, c.head_bias.data());
  c.head_logits.resize(static_cast<size_t>(rows * h));
  linear_forward(hidden, c.head_table.data(), c.head_bias.data(), c.head_logits.data(), rows, width,
                 h, bf16);
  c.clusters.resize(static_cast<size_t>(k_count));
  for (auto& cluster : c.clusters) {
    cluster.rows.clear();
    cluster.targets.clear();
  }
  c.head_targets.resize(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t t = targets[r];
    c.head_targets[static_cast<size_t>(r)] = cuts.head_index(t);
    const int64_t k = cuts.cluster_of(t);
    if (k < 0) continue;
    c.clusters[static_cast<size_t>(k)].rows.push_back(r);
    c.clusters[static_cast<size_t>(k)].targets.push_back(t - cuts.cutoffs[static_cast<size_t>(k)]);
  }
  c.head_lse.resize(static_cast<size_t>(rows));
  // −log p(t) = −log p_head(t's entry) − log p_cluster(t): the sums of both over rows, over R
  double total = static_cast<double>(cross_entropy_forward(c.head_logits.data(), c.head_targets.data(),
                                                           static_cast<T*>(nullptr), rows, h,
                                                           c.head_lse.data())) * static_cast<double>(rows);
  for (int64_t k = 0; k < k_count; ++k) {
    auto& cluster = c.clusters[static_cast<size_t>(k)];
    const auto n = static_cast<int64_t>(cluster.rows.size());
    const int64_t start = cuts.cutoffs[static_cast<size_t>(k)];
    const int64_t size = cuts.cutoffs[static_cast<size_t>(k + 1)] - start;
    cluster.hidden.resize(static_cast<size_t>(n * width));
    for (int64_t i = 0; i < n; ++i)
      std::copy_n(hidden + cluster.rows[static_cast<size_t>(i)] * width, width, cluster.hidden.data() + i * width);
    cluster.logits.resize(static_cast<size_t>(n * size));
    cluster.lse.resize(static_cast<size_t>(n));
    if (n == 0) continue;
    linear_forward(cluster.hidden.data(), table + start * width, bias + start, cluster.logits.data(), n,
                   width, size, bf16);
    total += static_cast<double>(cross_entropy_forward(cluster.logits.data(), cluster.targets.data(),
                                                       static_cast<T*>(nullptr), n, size,
                                                       cluster.lse.data())) * static_cast<double>(n);
  }
  return rows > 0 ? static_cast<T>(total / static_cast<double>(rows)) : T(0);
}

template <class T>
void adaptive_output_backward(const T* hidden, const T* table, const adaptive_output_cache<T>& c,
                              int64_t rows, int64_t width, const adaptive_cuts& cuts, T* dhidden,
                              T* dtable, T* dbias, T* dtoken_weight, T* dtoken_bias, bool bf16,
                              const std::vector<int64_t>* dtable_classes) {
  const int64_t h = cuts.head();
  const bool listed = dtable != nullptr && dtable_classes != nullptr;
  // The head: every row, its target's entry (a head class or its cluster's token)
  c.dhead.resize(static_cast<size_t>(rows * h));
  c.dhead_bias.assign(static_cast<size_t>(h), T(0));
  cross_entropy_backward(c.head_logits.data(), c.head_targets.data(), c.dhead.data(), rows, h, T(1),
                         c.head_lse.data(), c.dhead_bias.data());
  c.dhead_table.assign(static_cast<size_t>(h * width), T(0));
  linear_backward(c.dhead.data(), hidden, c.head_table.data(), dhidden, c.dhead_table.data(),
                  static_cast<T*>(nullptr), rows, width, h, bf16);
  scatter_head(c.dhead_table.data(), cuts, width, listed ? static_cast<T*>(nullptr) : dtable, dtoken_weight);
  scatter_head(c.dhead_bias.data(), cuts, 1, dbias, dtoken_bias);
  if (listed) {  // the listed head classes' rows
    for (size_t m = 0; m < dtable_classes->size(); ++m) {
      const int64_t cls = (*dtable_classes)[m];
      if (cuts.cluster_of(cls) >= 0) continue;
      const T* from = c.dhead_table.data() + cuts.head_index(cls) * width;
      T* to = dtable + static_cast<int64_t>(m) * width;
      for (int64_t j = 0; j < width; ++j) to[j] += from[j];
    }
  }
  // Each cluster: its rows alone, scaled as a share of the batch's mean
  for (int64_t k = 0; k < cuts.clusters(); ++k) {
    const auto& cluster = c.clusters[static_cast<size_t>(k)];
    const auto n = static_cast<int64_t>(cluster.rows.size());
    if (n == 0) continue;
    const int64_t start = cuts.cutoffs[static_cast<size_t>(k)];
    const int64_t size = cuts.cutoffs[static_cast<size_t>(k + 1)] - start;
    c.dlogits.resize(static_cast<size_t>(n * size));
    cross_entropy_backward(cluster.logits.data(), cluster.targets.data(), c.dlogits.data(), n, size,
                           static_cast<T>(static_cast<double>(n) / static_cast<double>(rows)),
                           cluster.lse.data(), dbias + start);
    c.dhidden.assign(static_cast<size_t>(n * width), T(0));
    linear_backward(c.dlogits.data(), cluster.hidden.data(), table + start * width, c.dhidden.data(),
                    dtable != nullptr && !listed ? dtable + start * width : nullptr, static_cast<T*>(nullptr),
                    n, width, size, bf16);
    if (listed) {  // the listed classes of this cluster: row += Σᵢ dlogits[i, class]·hidden[i]
      const auto first = std::lower_bound(dtable_classes->begin(), dtable_classes->end(), start);
      for (auto it = first; it != dtable_classes->end() && *it < start + size; ++it) {
        T* to = dtable + (it - dtable_classes->begin()) * width;
        for (int64_t i = 0; i < n; ++i) {
          const T d = c.dlogits[static_cast<size_t>(i * size + (*it - start))];
          const T* x = cluster.hidden.data() + i * width;
          for (int64_t j = 0; j < width; ++j) to[j] += d * x[j];
        }
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      T* to = dhidden + cluster.rows[static_cast<size_t>(i)] * width;
      const T* from = c.dhidden.data() + i * width;
      for (int64_t j = 0; j < width; ++j) to[j] += from[j];
    }
  }
}

template <class T>
void adaptive_log_probabilities(T* class_scores, const T* token_scores, int64_t rows,
                                const adaptive_cuts& cuts) {
  const int64_t classes = cuts.classes, k_count = cuts.clusters();
  const int64_t first = cuts.cutoffs.front(), last = cuts.cutoffs.back();
#pragma omp parallel for schedule(static) if (rows * classes >= (int64_t{1} << 16))
  for (int64_t r = 0; r < rows; ++r) {
    T* z = class_scores + r * classes;
    const T* tokens = token_scores + r * k_count;
    // the head's log-sum-exp over its three runs: the frequent classes, those after the last
    // cut, the cluster tokens
    const T top = run_max(tokens, k_count, run_max(z + last, classes - last, run_max(z, first, tokens[0])));
    const T sum = run_exp_sum(z, first, top) + run_exp_sum(z + last, classes - last, top) +
                  run_exp_sum(tokens, k_count, top);
    const T head_lse = top + std::log(sum);
    run_add(z, first, -head_lse);
    run_add(z + last, classes - last, -head_lse);
    for (int64_t k = 0; k < k_count; ++k) {  // log p_head(token k) + log softmax(cluster k)
      const int64_t start = cuts.cutoffs[static_cast<size_t>(k)];
      const int64_t size = cuts.cutoffs[static_cast<size_t>(k + 1)] - start;
      const T cluster_top = run_max(z + start, size, z[start]);
      const T cluster_lse = cluster_top + std::log(run_exp_sum(z + start, size, cluster_top));
      run_add(z + start, size, tokens[k] - head_lse - cluster_lse);
    }
  }
}

template float adaptive_output_forward(const float*, const float*, const float*, const float*, const float*,
                                       const int64_t*, int64_t, int64_t, const adaptive_cuts&,
                                       adaptive_output_cache<float>&, bool);
template double adaptive_output_forward(const double*, const double*, const double*, const double*,
                                        const double*, const int64_t*, int64_t, int64_t,
                                        const adaptive_cuts&, adaptive_output_cache<double>&, bool);
template void adaptive_output_backward(const float*, const float*, const adaptive_output_cache<float>&,
                                       int64_t, int64_t, const adaptive_cuts&, float*, float*, float*,
                                       float*, float*, bool, const std::vector<int64_t>*);
template void adaptive_output_backward(const double*, const double*, const adaptive_output_cache<double>&,
                                       int64_t, int64_t, const adaptive_cuts&, double*, double*, double*,
                                       double*, double*, bool, const std::vector<int64_t>*);
template void adaptive_log_probabilities(float*, const float*, int64_t, const adaptive_cuts&);
template void adaptive_log_probabilities(double*, const double*, int64_t, const adaptive_cuts&);

}  // namespace attn::nn
