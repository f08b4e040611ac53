// The training curve as SVG: a panel of losses and a panel of held-out accuracy, each a line per
// series with a dot per score, axes with round ticks, and a legend.
#include "attn/training_curve.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "attn/error.hpp"
#include "viz/markup.hpp"

namespace attn {

namespace {

struct series {
  std::string name, color;
  std::vector<double> x, y;
};

struct panel {
  std::string title, x_label;
  std::vector<series> lines;
};

std::string num(double v) {
  std::string s = fmt::format("{:.1f}", v);
  if (s.size() > 2 && s.ends_with(".0")) s.resize(s.size() - 2);
  return s == "-0" ? "0" : s;
}

// Round tick values covering [lo, hi]: steps of 1, 2 or 5 × 10^k, about five of them.
std::vector<double> ticks(double lo, double hi) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / 5, power = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = raw / power < 1.5 ? power : raw / power < 3.5 ? 2 * power : raw / power < 7.5 ? 5 * power : 10 * power;
  std::vector<double> out;
  for (double t = std::ceil(lo / step - 1e-9) * step; t <= hi + step * 1e-9; t += step) out.push_back(std::abs(t) < step * 1e-9 ? 0 : t);
  return out;
}

// Tick labels: 12,000,000 tokens as "12M", epochs as integers, losses with the decimals the step needs.
std::string tick_text(double v, double step) {
  const double a = std::abs(v);
  if (a >= 1e6 && step >= 1e5) return fmt::format("{:g}M", v / 1e6);
  if (a >= 1e3 && step >= 100) return fmt::format("{:g}k", v / 1e3);
  if (step >= 1) return fmt::format("{:.0f}", v);
  const int decimals = std::clamp(static_cast<int>(std::ceil(-std::log10(step) - 1e-9)), 0, 6);
  return fmt::format("{:.{}f}", v, decimals);
}

void draw_panel(std::string& out, const panel& p, double left, double top, double width, double height) {
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo, y_lo = x_lo, y_hi = -x_lo;
  for (const series& s : p.lines)
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.y[i])) continue;
      x_lo = std::min(x_lo, s.x[i]);
      x_hi = std::max(x_hi, s.x[i]);
      y_lo = std::min(y_lo, s.y[i]);
      y_hi = std::max(y_hi, s.y[i]);
    }
  if (!std::isfinite(x_lo)) x_lo = 0, x_hi = 1, y_lo = 0, y_hi = 1;
  if (x_hi == x_lo) x_lo -= 1, x_hi += 1;
  const double pad = (y_hi - y_lo) * 0.08 + (y_hi == y_lo ? std::max(0.05, std::abs(y_hi) * 0.1) : 0);
  y_lo -= pad;
  y_hi += pad;
  const std::vector<double> xt = ticks(x_lo, x_hi), yt = ticks(y_lo, y_hi);
  x_lo = std::min(x_lo, xt.front());
  x_hi = std::max(x_hi, xt.back());
  y_lo = std::min(y_lo, yt.front());
  y_hi = std::max(y_hi, yt.back());
  const auto X = [&](double x) { return left + (x - x_lo) / (x_hi - x_lo) * width; };
  const auto Y = [&](double y) { return top + height - (y - y_lo) / (y_hi - y_lo) * height; };
  out += fmt::format("<text x=\"{}\" y=\"{}\" class=\"panel-title\">{}</text>\n", num(left), num(top - 10),
                     viz::escape(p.title));
  out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" class=\"frame\"/>\n", num(left), num(top),
                     num(width), num(height));
  const double xs = xt.size() > 1 ? xt[1] - xt[0] : 1, ys = yt.size() > 1 ? yt[1] - yt[0] : 1;
  for (double t : xt) {
    out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" class=\"grid\"/>\n", num(X(t)), num(top),
                       num(top + height));
    out += fmt::format("<text x=\"{}\" y=\"{}\" class=\"tick\" text-anchor=\"middle\">{}</text>\n", num(X(t)),
                       num(top + height + 15), tick_text(t, xs));
  }
  for (double t : yt) {
    out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" class=\"grid\"/>\n", num(left), num(Y(t)),
                       num(left + width));
    out += fmt::format("<text x=\"{}\" y=\"{}\" class=\"tick\" text-anchor=\"end\" dominant-baseline=\"central\">{}</text>\n",
                       num(left - 6), num(Y(t)), tick_text(t, ys));
  }
  out += fmt::format("<text x=\"{}\" y=\"{}\" class=\"axis\" text-anchor=\"middle\">{}</text>\n", num(left + width / 2),
                     num(top + height + 34), viz::escape(p.x_label));
  // The legend under the axis label, one entry after another.
  double legend_x = left;
  const double legend_y = top + height + 54;
  for (const series& s : p.lines) {
    std::string points;
    for (size_t i = 0; i < s.x.size(); ++i)
      if (std::isfinite(s.y[i])) points += fmt::format("{}{},{}", points.empty() ? "" : " ", num(X(s.x[i])), num(Y(s.y[i])));
    out += fmt::format("<g class=\"series\" data-name=\"{}\">\n<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" "
                       "stroke-width=\"2\"/>\n",
                       viz::escape(s.name), points, s.color);
    for (size_t i = 0; i < s.x.size(); ++i)
      if (std::isfinite(s.y[i]))
        out += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"2.5\" fill=\"{}\"><title>{}: {}</title></circle>\n",
                           num(X(s.x[i])), num(Y(s.y[i])), s.color, viz::escape(s.name), fmt::format("{:.6g}", s.y[i]));
    out += "</g>\n";
    out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"{3}\" stroke-width=\"2\"/>"
                       "<text x=\"{4}\" y=\"{1}\" class=\"legend\" dominant-baseline=\"central\">{5}</text>\n",
                       num(legend_x), num(legend_y), num(legend_x + 20), s.color, num(legend_x + 26),
                       viz::escape(s.name));
    legend_x += 40 + 6.5 * static_cast<double>(viz::code_points(s.name));
  }
}

}  // namespace

std::string render_training_curve_svg(const training_history& h, const std::string& title) {
  if (h.empty()) throw_usage("the model file records no training history (it was made before attn kept one)");
  panel losses{"Loss (cross-entropy)", "", {}}, accuracy{"Held-out accuracy", "", {}};
  if (!h.evaluations.empty()) {
    // A corpus run scored every --eval-steps: against the tokens trained on.
    series train{"training (since the last score)", "#2a6ab8", {}, {}}, held{"held-out", "#e6550d", {}, {}};
    series acc{"held-out", "#e6550d", {}, {}};
    for (const train_eval_report& r : h.evaluations) {
      const auto x = static_cast<double>(r.tokens);
      train.x.push_back(x), train.y.push_back(r.train_loss);
      held.x.push_back(x), held.y.push_back(r.loss);
      acc.x.push_back(x), acc.y.push_back(r.accuracy);
    }
    losses = {"Loss (cross-entropy per token)", "tokens trained on", {train, held}};
    accuracy = {"Held-out accuracy (top-1)", "tokens trained on", {acc}};
  } else {
    const bool held_out = h.epochs.front().on_validation;
    series train{"training", "#2a6ab8", {}, {}}, held{held_out ? "held-out" : "training data, rescored", "#e6550d", {}, {}};
    series acc{held_out ? "held-out" : "training data", "#e6550d", {}, {}};
    for (const train_epoch_report& r : h.epochs) {
      const auto x = static_cast<double>(r.epoch);
      train.x.push_back(x), train.y.push_back(r.loss);
      held.x.push_back(x), held.y.push_back(r.eval_loss);
      acc.x.push_back(x), acc.y.push_back(r.accuracy);
    }
    losses = {"Loss (cross-entropy)", "epoch", {train, held}};
    accuracy = {held_out ? "Held-out accuracy" : "Accuracy on the training data (nothing held out)", "epoch", {acc}};
  }
  const double width = 360, height = 220, left = 64, top = 70, gap = 96;
  const double total_width = left + 2 * width + gap + 24, total_height = top + height + 72;
  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"attn-curve\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
      "<style>.attn-curve .frame{{fill:none;stroke:#999}} .attn-curve .grid{{stroke:#eee}} "
      ".attn-curve .tick{{font-size:11px;fill:#444}} .attn-curve .axis{{font-size:12px;fill:#444}} "
      ".attn-curve .legend{{font-size:11px;fill:#333}} .attn-curve .panel-title{{font-size:13px;fill:#222}} "
      ".attn-curve .title{{font-size:15px;fill:#222}}</style>\n"
      "<rect width=\"{0}\" height=\"{1}\" fill=\"#fff\"/>\n",
      num(total_width), num(total_height));
  out += fmt::format("<text x=\"16\" y=\"24\" class=\"title\">{}</text>\n",
                     viz::escape(title.empty() ? "Training curve" : "Training curve: " + title));
  draw_panel(out, losses, left, top, width, height);
  draw_panel(out, accuracy, left + width + gap, top, width, height);
  out += "</svg>\n";
  return out;
}

}  // namespace attn
