#include "text/segment_references.hpp"

#include "attn/error.hpp"

namespace attn::text {

segment_references gather_references(const std::string& metric, const std::vector<std::string>& hypotheses,
                                     const std::vector<std::vector<std::string>>& reference_sets) {
  if (reference_sets.empty() && !hypotheses.empty()) throw_usage(metric + " needs references");
  for (const auto& set : reference_sets)
    if (set.size() != hypotheses.size())
      throw_usage(metric + " needs one reference per hypothesis: " + std::to_string(hypotheses.size()) +
                  " hypotheses, " + std::to_string(set.size()) + " references");
  segment_references out;
  out.segments.resize(hypotheses.size());
  bool same_count = true;
  for (size_t i = 0; i < hypotheses.size(); ++i) {
    for (const auto& set : reference_sets)
      if (!set[i].empty()) out.segments[i].push_back(&set[i]);
    if (out.segments[i].empty())
      throw_input("", metric + ": empty reference", "segment " + std::to_string(i + 1));
    same_count &= out.segments[i].size() == out.segments[0].size();
  }
  // sacreBLEU counts the references it used: the sets given, less the empty ones.
  out.nrefs = !same_count          ? "var"
              : hypotheses.empty() ? std::to_string(reference_sets.size())
                                   : std::to_string(out.segments[0].size());
  return out;
}

}  // namespace attn::text
