#include "train/sharded_step.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "attn/error.hpp"

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

void write_shard(const nn::network<float>& net, const step_totals& t, float scale,
                 std::vector<char>& out) {
  shard_writer w(out);
  w.put(t.rows);
  w.put(t.tokens);
  w.put(t.loss_sum);
  if (t.rows == 0) return;
  std::vector<float> scaled;
  for (const nn::parameter<float>* p : net.parameters()) {
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
step_totals add_shard(nn::network<float>& net, shard_reader& r) {
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
  for (nn::parameter<float>* p : net.parameters()) {
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

}  // namespace

uint64_t shard_seed(uint64_t step_seed, int64_t shard) {
  if (step_seed == 0 || shard == 0) return step_seed;
  // splitmix64 of the step's seed and the shard's number: unrelated streams per shard.
  uint64_t z = step_seed + static_cast<uint64_t>(shard) * 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return (z ^ (z >> 31)) | 1;
}

step_totals sharded_gradients(nn::network<float>& net, int64_t items, int64_t all_rows,
                              const std::function<nn::batch(int64_t, int64_t)>& batch_of, int64_t shards,
                              uint64_t dropout_seed, const gradient_exchange* exchange,
                              nn::network_cache<float>& cache) {
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
  std::vector<char> computed;
  for (int64_t s = first; s < first + mine; ++s) {
    const int64_t begin = s * items / shards, end = (s + 1) * items / shards;
    step_totals t;
    net.zero_grad();
    if (end > begin) {
      const nn::batch b = batch_of(begin, end);
      t.tokens = b.tokens();
      if (!b.rows.empty()) {
        const float loss = net.forward(b, cache, shard_seed(dropout_seed, s));
        net.backward(b, cache);
        t.loss_sum = static_cast<double>(loss) * static_cast<double>(b.rows.size());
        t.rows = static_cast<int64_t>(b.rows.size());
      }
    }
    // The shard's loss is its own rows' mean; the batch's is over all rows.
    const float scale = static_cast<float>(static_cast<double>(t.rows) / static_cast<double>(std::max<int64_t>(all_rows, 1)));
    write_shard(net, t, scale, computed);
  }
  const std::vector<char> every = exchange != nullptr ? exchange->all_gather(computed) : computed;
  net.zero_grad();
  step_totals sum;
  shard_reader r(every);
  for (int64_t s = 0; s < shards; ++s) {
    const step_totals t = add_shard(net, r);
    sum.loss_sum += t.loss_sum;
    sum.rows += t.rows;
    sum.tokens += t.tokens;
  }
  if (!r.done()) throw std::runtime_error("the gradient shards do not add up");
  return sum;
}

step_totals sharded_gradients(nn::network<float>& net, const std::vector<const encoded_example*>& group,
                              text_task task, int64_t shards, uint64_t dropout_seed,
                              const gradient_exchange* exchange, nn::network_cache<float>& cache) {
  int64_t all_rows = 0;
  for (const encoded_example* e : group) all_rows += e->predictions();
  const auto batch_of = [&](int64_t begin, int64_t end) {
    return make_batch(std::vector<const encoded_example*>(group.begin() + begin, group.begin() + end), task);
  };
  return sharded_gradients(net, static_cast<int64_t>(group.size()), all_rows, batch_of, shards, dropout_seed,
                           exchange, cache);
}

}  // namespace attn::train
