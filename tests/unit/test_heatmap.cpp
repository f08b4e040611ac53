// The heatmap renderers on inputs the CLI cannot make yet: several heads, L ≠ S, odd labels,
// and bad shapes. The CLI tests check the files the command writes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>

#include "attn/error.hpp"
#include "attn/heatmap.hpp"
#include "viz/color_scale.hpp"
#include "viz/markup.hpp"

namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Two heads, 2 queries × 3 keys; the second head's rows are one-hot.
attn::heatmap two_heads() {
  attn::heatmap m;
  m.title = "two heads";
  m.queries = {"it", "<tired>"};
  m.keys = {"the", "animal", "tired"};
  m.heads.push_back({"head 0", attn::tensor({2, 3}, {0.2f, 0.5f, 0.3f, 0.1f, 0.1f, 0.8f})});
  m.heads.push_back({"head 1", attn::tensor({2, 3}, {0, 1, 0, 0, 0, 1})});
  return m;
}

TEST(heatmap, svg_has_one_panel_per_head_and_a_cell_per_weight) {
  std::string svg = attn::render_heatmap_svg(two_heads());
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_EQ(count(svg, "<g class=\"panel\""), 2u);
  EXPECT_EQ(count(svg, "<rect class=\"cell\""), 12u);
  EXPECT_EQ(count(svg, "class=\"col-label\""), 6u);
  EXPECT_EQ(count(svg, "class=\"row-label\""), 4u);
  EXPECT_NE(svg.find(">head 1</text>"), std::string::npos);
  // Labels are escaped; titles hold exact values.
  EXPECT_NE(svg.find(">&lt;tired&gt;</text>"), std::string::npos);
  EXPECT_EQ(svg.find("<tired>"), std::string::npos);
  EXPECT_NE(svg.find("<title>&lt;tired&gt; (1) → tired (2): 0.8</title>"), std::string::npos);
}

TEST(heatmap, html_has_a_head_selector_for_several_heads) {
  attn::heatmap_page page{two_heads(), {"a note"}, {}};
  std::string html = attn::render_heatmap_html(page);
  EXPECT_NE(html.find("<select id=\"head-select\">"), std::string::npos);
  EXPECT_EQ(count(html, "<option value="), 2u);
  EXPECT_NE(html.find("\"queries\":[\"it\",\"<tired>\"]"), std::string::npos);
  EXPECT_EQ(count(html, "</script>"), 2u);
  // One head: no selector.
  std::string one = attn::render_heatmap_html({attn::select_head(two_heads(), 1), {}, {}});
  EXPECT_EQ(one.find("<select"), std::string::npos);
  EXPECT_EQ(count(one, "<g class=\"panel\""), 1u);
  // ATTN_HEATMAP_PAGE=path writes the two-head page, to look at it in a browser.
  if (const char* path = std::getenv("ATTN_HEATMAP_PAGE")) std::ofstream(path) << html;
}

TEST(heatmap, bad_shapes_and_heads_are_usage_errors) {
  attn::heatmap m = two_heads();
  m.keys.pop_back();
  EXPECT_THROW(attn::render_heatmap_svg(m), attn::error);
  m = two_heads();
  m.heads.clear();
  EXPECT_THROW(attn::render_heatmap_html({m, {}, {}}), attn::error);
  try {
    attn::select_head(two_heads(), 2);
    FAIL() << "no error";
  } catch (const attn::error& e) {
    EXPECT_EQ(e.kind(), attn::error_kind::usage);
    EXPECT_NE(std::string(e.what()).find("0 … 1"), std::string::npos) << e.what();
  }
  attn::heatmap_page page{two_heads(), {}, {{"t", attn::tensor({2, 2}), {"a"}, {"b", "c"}}}};
  EXPECT_THROW(attn::render_heatmap_html(page), attn::error);
}

TEST(heatmap, wide_tables_are_shortened) {
  attn::tensor wide({2, 40}, 0.5f);
  std::vector<std::string> cols;
  for (int j = 0; j < 40; ++j) cols.push_back("d" + std::to_string(j));
  attn::heatmap_page page{two_heads(), {}, {{"E", wide, {"it", "<tired>"}, cols}}};
  std::string html = attn::render_heatmap_html(page);
  EXPECT_NE(html.find("<th>d13</th><th class=\"gap\">…</th><th>d39</th>"), std::string::npos);
  EXPECT_EQ(html.find("<th>d14</th>"), std::string::npos);
}

TEST(color_scale, ends_and_terminal_colours) {
  using namespace attn::viz;
  color_scale s = color_scale::fitting(std::vector<float>{0.1f, 0.9f, -INFINITY});
  EXPECT_EQ(s.lo, 0);
  EXPECT_DOUBLE_EQ(s.hi, double(0.9f));
  EXPECT_EQ(hex(s.color(0)), "#ffffff");
  EXPECT_EQ(hex(s.color(0.9f)), "#0b2f66");
  EXPECT_TRUE(s.is_dark(0.9f));
  EXPECT_FALSE(s.is_dark(0.0f));
  EXPECT_EQ(ansi256({255, 255, 255}), 231);
  EXPECT_EQ(ansi256({0, 0, 0}), 16);
  EXPECT_EQ(ansi256({0, 0, 255}), 21);
  // Negative values (scores) widen the scale downwards.
  EXPECT_EQ(color_scale::fitting(std::vector<float>{-2, 2}).lo, -2);
}

TEST(markup, escapes_and_repairs_text) {
  using attn::viz::escape;
  EXPECT_EQ(escape("a&b<c>\"d'"), "a&amp;b&lt;c&gt;&quot;d&#39;");
  EXPECT_EQ(escape("caf\xC3\xA9"), "caf\xC3\xA9");
  EXPECT_EQ(escape("bad\xFF!"), "bad\xEF\xBF\xBD!");
  EXPECT_EQ(escape("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong "/"
  EXPECT_EQ(escape(std::string("nul\0x", 5)), "nul\xEF\xBF\xBDx");
  EXPECT_EQ(attn::viz::exact(0.1f), "0.1");
  EXPECT_EQ(attn::viz::exact(-INFINITY), "-inf");
}

}  // namespace
