#include "train/loop.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <filesystem>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>

#include "attn/cpu.hpp"
#include "attn/error.hpp"
#include "train/device_training.hpp"
#include "train/optimizer.hpp"
#include "train/sharded_step.hpp"
#include "train/trainer_parts.hpp"

namespace attn::train {

namespace {

// Budgets in steps, from counts a user may set near 2^63: rounded up and multiplied without overflow.
int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }
int64_t saturating_product(int64_t a, int64_t b) {
  int64_t product = 0;
  return __builtin_mul_overflow(a, b, &product) ? std::numeric_limits<int64_t>::max() : product;
}

}  // namespace

void check_loop_options(const train_options& o) {
  if (o.resume && o.checkpoint.empty()) throw_usage("--resume needs a checkpoint path");
  if (!o.checkpoint.empty() && !o.resume && std::filesystem::exists(o.checkpoint) &&
      !checkpoint::is_checkpoint(o.checkpoint))
    throw_input(o.checkpoint, "exists and is not an attn checkpoint; attn will not overwrite it "
                              "(give another --checkpoint)");
}

// Epochs given, or enough for the automatic number of steps; cut short by --max-tokens (the
// steps it takes, so the learning rate's schedule knows its end) and, as the run goes, by --time.
loop_budget plan_budget(const train_options& o, int64_t steps, const budget_rules& rules) {
  loop_budget b;
  b.steps = steps;
  // (Rounded up without a sum, which would overflow for a budget near 2^63.)
  b.token_steps = o.max_tokens > 0 ? ceil_div(o.max_tokens, rules.tokens_per_step) : 0;
  const int64_t min_steps = o.min_steps > 0 ? o.min_steps
                            : b.token_steps > 0 ? b.token_steps
                            : o.time_limit > 0 ? saturating_product(steps, rules.max_epochs)
                                               : rules.default_min_steps;
  b.epochs = o.epochs > 0 ? o.epochs : std::clamp<int64_t>(ceil_div(min_steps, steps), rules.min_epochs, rules.max_epochs);
  b.all_epochs = saturating_product(steps, b.epochs);
  b.total = b.token_steps > 0 ? std::min(b.token_steps, b.all_epochs) : b.all_epochs;
  b.warmup = std::max<int64_t>(1, std::llround(o.warmup * static_cast<double>(b.total)));
  return b;
}

void run_training_loop(const train_options& o, const train_callbacks& cb, trainable& model,
                       const std::function<std::string()>& encode_model, batch_source& source,
                       const task_evaluation& eval, const loop_budget& budget, checkpoint_identity identity,
                       int64_t sequences, train_result& result, device_training* device) {
  const int64_t epochs = budget.epochs, steps = budget.steps, total = budget.total;
  const std::vector<nn::parameter<float>*> params = model.parameters();
  adamw optimiser(params, {.weight_decay = o.weight_decay});
  std::vector<std::vector<float>> best_weights;
  const bool validating = eval.validating;
  // --device cuda: the step, clipping and the optimiser on the GPU's copy of the weights, read
  // back whenever the loop reads them (the optimiser's state stays there: no checkpoints yet)
  if (device != nullptr) {
    if (cb.exchange != nullptr) throw_usage("attn-mpi trains on the CPU (no --device cuda)");
    identity.path.clear();
  }
  const auto weights_back = [&] {
    if (device) device->download();
  };
  const bool checkpoints = !identity.path.empty();

  progress p;
  bool resumed = false;
  result.checkpoint_run = identity.run;
  if (o.resume) {
    const run_shape run{.epochs = epochs, .steps = steps, .part_steps = source.part_steps(), .sequences = sequences};
    p = load_checkpoint(identity, o.task, source, result.epochs, result.evaluations, run, validating, params,
                        optimiser, best_weights);
    result.checkpoint_run = identity.run;
    result.resumed_at = p.done;
    result.checkpoint_written = true;  // the run goes on in that file: it is the run's own
    result.best_epoch = p.best_epoch;
    resumed = true;
  }

  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const double seconds_before = p.seconds;  // a resumed run's time budget goes on from here
  const auto seconds_since = [](clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); };
  const auto run_seconds = [&] { return seconds_before + seconds_since(start); };
  const int64_t first_done = p.done, first_tokens = p.all_tokens;
  // MFU's denominator: the FMA peak, measured once (a tenth of a second) in a run someone reads
  // the steps of, after its first second (a short run pays nothing).
  double peak_flops = 0;
  // Seconds spent beside the steps — the peak's measurement, held-out scoring, snapshots and
  // checkpoints — left out of the tokens a second and the MFU, which are the steps' own (as
  // nanoGPT's and PyTorch twins' clocks stop while they evaluate). The --time budget counts them.
  double aside = 0;
  const auto set_aside = [&](const auto& work) {
    const auto t = clock::now();
    work();
    aside += seconds_since(t);
  };
  bool measured = false;
  const auto measure_peak = [&] {
    measured = true;
    if (device) {  // the GPU's dense peak in the step's precision, from its specification
      peak_flops = device->peak_flops();
      return;
    }
    set_aside([&] { peak_flops = measure_fma_peak_gflops(omp_get_max_threads(), 0.1) * 1e9; });
  };
  double flops = 0;  // this sitting's steps'
  const bool shared = cb.exchange != nullptr && cb.exchange->processes > 1;
  const bool writes = cb.exchange == nullptr || cb.exchange->process == 0;  // the checkpoint
  const auto stop_here = [&]() -> bool {
    // A data-parallel run's processes could not agree on the step a signal came at: they are
    // stopped by ending them, and resume from the last periodic checkpoint.
    const bool asked = !shared && cb.stop != nullptr && cb.stop->load();
    return asked || (o.stop_after_steps > 0 && p.done >= o.stop_after_steps);
  };
  // The time budget's clock, read once a step: process 0's in a data-parallel run, so that every
  // process takes the same learning rate and stops at the same step.
  double step_seconds = seconds_before;
  const auto read_clock = [&] {
    step_seconds = run_seconds();
    if (!shared || !(o.time_limit > 0)) return;
    std::vector<char> mine(sizeof(double));
    std::memcpy(mine.data(), &step_seconds, sizeof(double));
    const std::vector<char> every = cb.exchange->all_gather(mine);
    std::memcpy(&step_seconds, every.data(), sizeof(double));
  };
  // Whether a budget other than the epochs is spent (then the epoch in progress is the last).
  const auto budget_spent = [&]() -> std::string {
    if (p.done >= total) return o.max_tokens > 0 && budget.token_steps <= budget.all_epochs ? "--max-tokens" : "";
    if (o.time_limit > 0 && step_seconds >= o.time_limit) return "--time";
    return "";
  };
  // The learning rate's schedule by steps, or, with a time budget, by the share of it spent.
  const auto schedule_step = [&]() -> int64_t {
    if (!(o.time_limit > 0)) return p.done;
    const double share = std::min(1.0, step_seconds / o.time_limit);
    return std::max<int64_t>(p.done, std::llround(share * static_cast<double>(total)));
  };
  const auto score_held_out = [&] {
    optimiser.flush();  // bring deferred rows up to date
    scored_examples sc;
    set_aside([&] { sc = eval.held_out(); });
    return sc;
  };
  const auto save = [&](const progress& at) {
    save_checkpoint(identity, at, source, result.epochs, result.evaluations, params, optimiser, best_weights);
  };
  const auto window_loss = [&] { return p.window_loss_sum / static_cast<double>(std::max<int64_t>(p.window_rows, 1)); };

  auto epoch_start = clock::now();
  double epoch_train_seconds = 0;
  // A resumed epoch's tokens from before this sitting: its tokens a second count only this one's.
  int64_t epoch_tokens_before = p.epoch_tokens;
  bool last_epoch = false;
  const auto parts = static_cast<int64_t>(source.part_steps().size());
  for (; p.epoch <= epochs && !last_epoch; ++p.epoch) {
    const int64_t epoch = p.epoch;
    for (;; ++p.part, p.batch = 0) {
      if (p.part >= parts) break;
      const int64_t part_batches = source.begin_part(epoch, p.part, resumed);
      resumed = false;
      if (part_batches == 0) break;
      const auto t0 = clock::now();
      const double aside_before = aside;
      for (; p.batch < part_batches; ++p.batch) {
        if (stop_here()) {
          p.seconds = run_seconds();
          if (checkpoints && writes) save(p);
          result.checkpoint_written = checkpoints || result.checkpoint_written;
          result.checkpoint = identity.path;
          result.checkpoint_run = identity.run;
          result.stopped = true;
          result.trained_tokens = p.all_tokens;
          weights_back();
          optimiser.flush();
          return;
        }
        // The step's gradient: the batch's, or its shards' summed in order (attn-mpi: each
        // process computes its own shards and they swap them).
        const step_batch b = source.batch(p.batch, p.done);
        const step_totals t = device ? device->gradients(b.batch_of(0, b.items), b.dropout_seed)
                                     : model.gradients(b, o.shards, cb.exchange);
        check_finite_loss(o, t.loss_sum, p.done + 1);
        if (t.rows > 0 && !device) clip_gradients(params, o.clip);
        p.loss_sum += t.loss_sum;
        p.rows_sum += t.rows;
        p.window_loss_sum += t.loss_sum;
        p.window_rows += t.rows;
        // Every step counts, even one with nothing to predict, so the schedule stays fixed.
        read_clock();
        const double lr = learning_rate(schedule_step(), total, budget.warmup, o.lr);
        if (device) device->update(lr, t.rows > 0 ? o.clip : 0.0);
        else optimiser.step(lr);
        ++p.done;
        p.epoch_tokens += t.tokens;
        p.all_tokens += t.tokens;
        flops += model.step_flops(b, t);
        if (cb.on_step) {
          if (!measured && seconds_since(start) >= 1.0) measure_peak();
          const double elapsed = seconds_since(start) - aside;
          const auto here = static_cast<double>(p.done - first_done);
          double eta = here > 0 ? elapsed / here * static_cast<double>(total - p.done) : 0.0;
          if (o.time_limit > 0) eta = std::min(eta, std::max(0.0, o.time_limit - run_seconds()));
          const int64_t in_epoch = p.done - (epoch - 1) * steps;
          cb.on_step({epoch, epochs, in_epoch, steps, p.loss_sum / static_cast<double>(std::max<int64_t>(p.rows_sum, 1)), lr,
                      elapsed > 0 ? static_cast<double>(p.all_tokens - first_tokens) / elapsed : 0.0, eta,
                      elapsed > 0 && peak_flops > 0 ? flops / elapsed / peak_flops : 0.0});
        }
        // Scored before the checkpoint of the same step, which then keeps the score: a resumed
        // run's history is the uninterrupted run's.
        if (o.eval_steps > 0 && p.done % o.eval_steps == 0 && validating) {
          const scored_examples sc = score_held_out();
          result.evaluations.push_back({p.done, total, p.all_tokens, sc.loss, sc.accuracy, window_loss()});
          p.window_loss_sum = 0;
          p.window_rows = 0;
          if (cb.on_eval) cb.on_eval(result.evaluations.back());
        }
        const bool snapshot_now = o.save_steps > 0 && p.done % o.save_steps == 0;
        const bool checkpoint_now = o.checkpoint_steps > 0 && p.done % o.checkpoint_steps == 0;
        if (snapshot_now || (checkpoint_now && checkpoints)) weights_back();
        if (snapshot_now && writes && cb.on_snapshot)
          optimiser.flush();  // done by the held-out score above (when the run holds text out)
        // Never a diverged state over a sound one. Every rank checks (their weights are the
        // same), not only the one that writes: a rank that stopped alone would leave the others
        // waiting in the next step's exchange.
        set_aside([&] {
          if (snapshot_now || checkpoint_now) check_finite_weights(o, params, p.done);
          if (snapshot_now && writes && cb.on_snapshot) cb.on_snapshot(p.done, encode_model());
          if (checkpoint_now && checkpoints && writes) {
            progress at = p;
            ++at.batch;  // this batch is done
            at.seconds = run_seconds();
            save(at);
            result.checkpoint_written = true;
          }
        });
        result.budget_end = budget_spent();
        if (!result.budget_end.empty() || p.done >= total) {
          last_epoch = true;
          ++p.batch;
          break;
        }
      }
      epoch_train_seconds += seconds_since(t0) - (aside - aside_before);
      if (last_epoch) break;
      source.end_part();
    }
    // The epoch's end: bring deferred rows up to date, score, keep the best.
    train_epoch_report r;
    r.epoch = epoch;
    r.epochs = epochs;
    r.loss = p.loss_sum / static_cast<double>(std::max<int64_t>(p.rows_sum, 1));
    r.on_validation = validating;
    weights_back();
    optimiser.flush();
    scored_examples sc;
    set_aside([&] {
      sc = validating ? eval.held_out() : eval.without_held_out ? eval.without_held_out() : scored_examples{};
    });
    r.accuracy = sc.accuracy;
    r.eval_loss = sc.loss;
    r.n = sc.n;
    // The epoch's score joins the curve too, unless --eval-steps scored this very step.
    if (validating && eval.epoch_history &&
        (result.evaluations.empty() || result.evaluations.back().step != p.done)) {
      result.evaluations.push_back({p.done, total, p.all_tokens, sc.loss, sc.accuracy, window_loss()});
      p.window_loss_sum = 0;
      p.window_rows = 0;
    }
    r.seconds = seconds_since(epoch_start);
    r.tokens_per_second =
        epoch_train_seconds > 0 ? static_cast<double>(p.epoch_tokens - epoch_tokens_before) / epoch_train_seconds : 0.0;
    // Without held-out text the last epoch is kept: nothing says an earlier one generalises better.
    r.best = !validating || eval.improves(sc, p.best);
    if (r.best) {
      p.best = sc;
      p.best_epoch = epoch;
      // Kept apart unless it is the last epoch (then the weights in place are the best).
      p.best_saved = validating && epoch < epochs && !last_epoch;
      best_weights = p.best_saved ? snapshot(params) : std::vector<std::vector<float>>{};
    }
    result.best_epoch = p.best_epoch;
    result.epochs.push_back(r);
    if (cb.on_epoch) cb.on_epoch(r);
    p.loss_sum = 0;
    p.rows_sum = 0;
    p.epoch_tokens = 0;
    p.part = 0;
    p.batch = 0;
    epoch_start = clock::now();
    epoch_train_seconds = 0;
    epoch_tokens_before = 0;
    if (eval.patience && validating && epoch - p.best_epoch >= o.patience && epoch < epochs && !last_epoch) {
      result.stopped_early = true;
      break;
    }
  }
  if (p.best_saved && result.best_epoch != result.epochs.back().epoch) restore(params, best_weights);
  check_finite_weights(o, params, p.done);
  result.trained_tokens = p.all_tokens;
}

}  // namespace attn::train
