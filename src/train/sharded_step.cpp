#include "train/sharded_step.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <stdexcept>

#include "attn/error.hpp"
#include "nn/parallel_elements.hpp"

namespace attn::train {

namespace {

// A shard's gradient as bytes: its rows, tokens and loss sum, then (when it has rows) every
// trainable parameter's gradient in the network's order, already scaled to the whole batch's
// mean. A row-sparse table sends its touched rows only: their count, their indices, their values.
class shard_writer {
 public:
  explicit shard_writer(std::vector<char>& out) : out_(out) {}
  template <class T>
  void put(const T* values, size_t n) {
    if (n == 0) return;  // (memcpy must not see the null pointer of an empty vector)
    const size_t at = out_.size();
    out_.resize(at + n * sizeof(T));
    std::memcpy(out_.data() + at, values, n * sizeof(T));
  }
  template <class T>
  void put(T value) { put(&value, 1); }

 private:
  std::vector<char>& out_;
};

class shard_reader {
 public:
  explicit shard_reader(const std::vector<char>& in) : in_(in) {}
  template <class T>
  const char* take(size_t n) {
    if (at_ + n * sizeof(T) > in_.size()) throw std::runtime_error("a gradient shard ended early");
    const char* p = in_.data() + at_;
    at_ += n * sizeof(T);
    return p;
  }
  template <class T>
  T get() {
    T value;
    std::memcpy(&value, take<T>(1), sizeof(T));
    return value;
  }
  bool done() const { return at_ == in_.size(); }

 private:
  const std::vector<char>& in_;
  size_t at_ = 0;
};

void write_shard(const std::vector<nn::parameter<float>*>& params, const step_totals& t, float scale,
                 std::vector<char>& out) {
  shard_writer w(out);
  w.put(t.rows);
  w.put(t.tokens);
  w.put(t.loss_sum);
  if (t.rows == 0) return;
  std::vector<float> scaled;
  for (const nn::parameter<float>* p : params) {
    if (!p->trainable) continue;
    if (p->sparse()) {
      w.put(static_cast<int64_t>(p->touched.size()));
      w.put(p->touched.data(), p->touched.size());
      for (int64_t r : p->touched) {
        const float* row = p->grad.data() + r * p->row_width;
        scaled.assign(row, row + p->row_width);
        for (float& x : scaled) x *= scale;
        w.put(scaled.data(), scaled.size());
      }
    } else {
      scaled.assign(p->grad.begin(), p->grad.end());
      for (float& x : scaled) x *= scale;
      w.put(scaled.data(), scaled.size());
    }
  }
}

// Adds one shard's gradients (after the grads were cleared) and returns its totals.
step_totals add_shard(const std::vector<nn::parameter<float>*>& params, shard_reader& r) {
  step_totals t;
  t.rows = r.get<int64_t>();
  t.tokens = r.get<int64_t>();
  t.loss_sum = r.get<double>();
  if (t.rows == 0) return t;
  const auto add = [](float* to, const char* from, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      float x;
      std::memcpy(&x, from + i * sizeof(float), sizeof(float));
      to[i] += x;
    }
  };
  for (nn::parameter<float>* p : params) {
    if (!p->trainable) continue;
    if (p->sparse()) {
      const auto n = static_cast<size_t>(r.get<int64_t>());
      std::vector<int64_t> rows(n);
      if (n > 0) std::memcpy(rows.data(), r.take<int64_t>(n), n * sizeof(int64_t));
      p->touch(rows);
      const auto width = static_cast<size_t>(p->row_width);
      for (int64_t row : rows)
        add(p->grad.data() + row * p->row_width, r.take<float>(width), width);
    } else {
      add(p->grad.data(), r.take<float>(p->grad.size()), p->grad.size());
    }
  }
  return t;
}

// Makes `count` copies of net (the first step) and gives each net's trainable values: the frozen
// ones (the GloVe table) never change, so they are copied once.
void refresh_copies(const models::network<float>& net, int count, shard_copies& copies) {
  while (static_cast<int>(copies.nets.size()) < count) {
    copies.nets.push_back(net);
    copies.caches.emplace_back();
  }
  const std::vector<const nn::parameter<float>*> from = net.parameters();
  for (int c = 0; c < count; ++c) {
    const std::vector<nn::parameter<float>*> to = copies.nets[static_cast<size_t>(c)].parameters();
    for (size_t i = 0; i < from.size(); ++i)
      if (from[i]->trainable) std::copy(from[i]->value.begin(), from[i]->value.end(), to[i]->value.begin());
  }
}

// The sum add_shard makes, element for element, taken from the networks the shards were computed
// on, into on[0] (the network itself, holding shard 0's gradient): each element is 0 + x₀ + x₁ + … in shard
// order, xₛ = float(gradₛ · scaleₛ), over the shards with rows, and a table's row only from
// the shards that touched it.
void sum_in_shard_order(const std::vector<models::network<float>*>& on, const std::vector<step_totals>& totals,
                        const std::vector<float>& scales) {
  std::vector<std::vector<nn::parameter<float>*>> params;
  for (models::network<float>* n : on) params.push_back(n->parameters());
  const std::vector<nn::parameter<float>*> to = params[0];
  const bool first_counts = totals[0].rows > 0;
  for (size_t k = 0; k < to.size(); ++k) {
    nn::parameter<float>& p = *to[k];
    if (!p.trainable) continue;
    if (p.sparse()) {
      const auto width = static_cast<size_t>(p.row_width);
      if (first_counts)
        for (int64_t row : p.touched)
          for (size_t c = 0; c < width; ++c) {
            float& g = p.grad[static_cast<size_t>(row) * width + c];
            g = 0.0f + g * scales[0];
          }
      for (size_t s = 1; s < on.size(); ++s) {
        if (totals[s].rows == 0) continue;
        const nn::parameter<float>& from = *params[s][k];
        p.touch(from.touched);
        for (int64_t row : from.touched)
          for (size_t c = 0; c < width; ++c) {
            const size_t at = static_cast<size_t>(row) * width + c;
            p.grad[at] += from.grad[at] * scales[s];
          }
      }
      continue;
    }
    const auto n = static_cast<int64_t>(p.grad.size());
    float* g = p.grad.data();
#pragma omp parallel for schedule(static) if (nn::worth_threads_elementwise(n))
    for (int64_t i = 0; i < n; ++i) {
      float acc = 0.0f;
      if (first_counts) acc += g[i] * scales[0];
      for (size_t s = 1; s < on.size(); ++s)
        if (totals[s].rows > 0) acc += params[s][k]->grad[static_cast<size_t>(i)] * scales[s];
      g[i] = acc;
    }
  }
}

}  // namespace

uint64_t shard_seed(uint64_t step_seed, int64_t shard) {
  if (step_seed == 0 || shard == 0) return step_seed;
  // splitmix64 of the step's seed and the shard's number: unrelated streams per shard.
  uint64_t z = step_seed + static_cast<uint64_t>(shard) * 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return (z ^ (z >> 31)) | 1;
}

step_totals sharded_gradients(models::network<float>& net, int64_t items, int64_t all_rows,
                              const std::function<nn::batch(int64_t, int64_t)>& batch_of, int64_t shards,
                              uint64_t dropout_seed, const gradient_exchange* exchange,
                              models::network_cache<float>& cache, shard_copies* copies) {
  const int processes = exchange != nullptr ? exchange->processes : 1;
  if (shards == 1 && processes == 1) {  // the plain batch gradient
    const nn::batch b = batch_of(0, items);
    net.zero_grad();
    if (b.rows.empty()) return {0.0, 0, b.tokens()};
    const float loss = net.forward(b, cache, dropout_seed);
    net.backward(b, cache);
    const auto rows = static_cast<int64_t>(b.rows.size());
    return {static_cast<double>(loss) * static_cast<double>(rows), rows, b.tokens()};
  }
  if (shards % processes != 0)
    throw_usage(fmt::format("--shards {} is not a multiple of the {} processes", shards, processes));
  const int64_t mine = shards / processes;
  const int64_t first = (exchange != nullptr ? exchange->process : 0) * mine;
  const int threads = copies != nullptr && !omp_in_parallel()
                          ? static_cast<int>(std::min<int64_t>(omp_get_max_threads(), mine))
                          : 1;
  // One process whose threads take a shard each sums the shards straight from the networks they
  // were computed on; otherwise each shard's gradient is written out as bytes (for the other
  // processes, or because one network computes several shards in turn).
  const bool direct = exchange == nullptr && threads > 1 && mine <= threads;
  std::vector<step_totals> totals(static_cast<size_t>(mine));
  std::vector<float> scales(static_cast<size_t>(mine));
  std::vector<std::vector<char>> computed(static_cast<size_t>(mine));
  // Shard s's gradient, computed on `on` (the network or a copy of it).
  const auto compute = [&](int64_t s, models::network<float>& on, models::network_cache<float>& on_cache) {
    const int64_t begin = s * items / shards, end = (s + 1) * items / shards;
    step_totals t;
    on.zero_grad();
    if (end > begin) {
      const nn::batch b = batch_of(begin, end);
      t.tokens = b.tokens();
      if (!b.rows.empty()) {
        const float loss = on.forward(b, on_cache, shard_seed(dropout_seed, s));
        on.backward(b, on_cache);
        t.loss_sum = static_cast<double>(loss) * static_cast<double>(b.rows.size());
        t.rows = static_cast<int64_t>(b.rows.size());
      }
    }
    // The shard's loss is its own rows' mean; the batch's is over all rows.
    const float scale = static_cast<float>(static_cast<double>(t.rows) / static_cast<double>(std::max<int64_t>(all_rows, 1)));
    const auto at = static_cast<size_t>(s - first);
    totals[at] = t;
    scales[at] = scale;
    if (!direct) write_shard(on.parameters(), t, scale, computed[at]);
  };
  const auto network_of = [&](int t) -> models::network<float>& {
    return t == 0 ? net : copies->nets[static_cast<size_t>(t - 1)];
  };
  if (threads <= 1) {
    for (int64_t s = first; s < first + mine; ++s) compute(s, net, cache);
  } else {
    refresh_copies(net, threads - 1, *copies);
    std::exception_ptr failed;
    // Shard first + i on thread i % threads: thread 0 on the network itself, thread t on copy t − 1.
#pragma omp parallel for num_threads(threads) schedule(static, 1)
    for (int64_t i = 0; i < mine; ++i) {
      const int t = omp_get_thread_num();
      omp_set_num_threads(1);  // this thread's own products run on it alone
      try {
        compute(first + i, network_of(t), t == 0 ? cache : copies->caches[static_cast<size_t>(t - 1)]);
      } catch (...) {
#pragma omp critical(attn_shard_failure)
        if (!failed) failed = std::current_exception();
      }
    }
    if (failed) std::rethrow_exception(failed);
  }
  step_totals sum;
  if (direct) {
    std::vector<models::network<float>*> on;
    for (int64_t i = 0; i < mine; ++i) on.push_back(&network_of(static_cast<int>(i)));
    sum_in_shard_order(on, totals, scales);
    for (const step_totals& t : totals) {
      sum.loss_sum += t.loss_sum;
      sum.rows += t.rows;
      sum.tokens += t.tokens;
    }
    return sum;
  }
  net.zero_grad();
  return sum_exchanged_shards(net.parameters(), computed, shards, exchange);
}

step_totals sum_exchanged_shards(const std::vector<nn::parameter<float>*>& params,
                                 const std::vector<std::vector<char>>& computed, int64_t shards,
                                 const gradient_exchange* exchange) {
  std::vector<char> mine_bytes;
  for (const std::vector<char>& c : computed) mine_bytes.insert(mine_bytes.end(), c.begin(), c.end());
  const std::vector<char> every = exchange != nullptr ? exchange->all_gather(mine_bytes) : mine_bytes;
  shard_reader r(every);
  step_totals sum;
  for (int64_t s = 0; s < shards; ++s) {
    const step_totals t = add_shard(params, r);
    sum.loss_sum += t.loss_sum;
    sum.rows += t.rows;
    sum.tokens += t.tokens;
  }
  if (!r.done()) throw std::runtime_error("the gradient shards do not add up");
  return sum;
}

step_totals sharded_gradients(const std::vector<nn::parameter<float>*>& params, int64_t items, int64_t all_rows,
                              const std::function<step_totals(int64_t, int64_t, uint64_t)>& shard_gradient,
                              int64_t shards, uint64_t dropout_seed, const gradient_exchange* exchange) {
  const int processes = exchange != nullptr ? exchange->processes : 1;
  if (shards % processes != 0)
    throw_usage(fmt::format("--shards {} is not a multiple of the {} processes", shards, processes));
  const int64_t mine = shards / processes;
  const int64_t first = (exchange != nullptr ? exchange->process : 0) * mine;
  std::vector<std::vector<char>> computed(static_cast<size_t>(mine));
  for (int64_t s = first; s < first + mine; ++s) {
    const int64_t begin = s * items / shards, end = (s + 1) * items / shards;
    for (nn::parameter<float>* p : params) p->clear_grad();
    const step_totals t = end > begin ? shard_gradient(begin, end, shard_seed(dropout_seed, s)) : step_totals{};
    // The shard's loss is its own rows' mean; the batch's is over all rows.
    const float scale = static_cast<float>(static_cast<double>(t.rows) / static_cast<double>(std::max<int64_t>(all_rows, 1)));
    write_shard(params, t, scale, computed[static_cast<size_t>(s - first)]);
  }
  for (nn::parameter<float>* p : params) p->clear_grad();
  return sum_exchanged_shards(params, computed, shards, exchange);
}

step_totals sharded_gradients(models::network<float>& net, const std::vector<const encoded_example*>& group,
                              text_task task, int64_t shards, uint64_t dropout_seed,
                              const gradient_exchange* exchange, models::network_cache<float>& cache,
                              shard_copies* copies) {
  int64_t all_rows = 0;
  for (const encoded_example* e : group) all_rows += e->predictions();
  const auto batch_of = [&](int64_t begin, int64_t end) {
    return make_batch(std::vector<const encoded_example*>(group.begin() + begin, group.begin() + end), task);
  };
  return sharded_gradients(net, static_cast<int64_t>(group.size()), all_rows, batch_of, shards, dropout_seed,
                           exchange, cache, copies);
}

}  // namespace attn::train
