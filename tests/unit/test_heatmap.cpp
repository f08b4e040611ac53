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

attn::heatmap_page page_of(const attn::heatmap& m) {
  attn::heatmap_page page;
  page.map = m;
  return page;
}

TEST(heatmap, html_carries_every_head_as_data) {
  attn::heatmap_page page = page_of(two_heads());
  page.notes = {"a note"};
  std::string html = attn::render_heatmap_html(page);
  // Heads given as weights alone travel as base64 float32, one layer, in order.
  EXPECT_NE(html.find("\"queries\":[\"it\",\"<tired>\"]"), std::string::npos);
  const std::vector<float> w0 = {0.2f, 0.5f, 0.3f, 0.1f, 0.1f, 0.8f};
  const std::string head0 = "{\"name\":\"head 0\",\"weights\":\"" + attn::viz::base64_floats(w0.data(), 6) + "\"}";
  EXPECT_NE(html.find(head0), std::string::npos) << head0;
  EXPECT_NE(html.find("{\"name\":\"head 1\",\"weights\":"), std::string::npos);
  EXPECT_NE(html.find("<p class=\"note\">a note</p>"), std::string::npos);
  EXPECT_EQ(count(html, "</script>"), 2u);
  EXPECT_EQ(html.find("<select"), std::string::npos);  // the script builds the controls
  // ATTN_HEATMAP_PAGE=path writes the two-head page, to look at it in a browser.
  if (const char* path = std::getenv("ATTN_HEATMAP_PAGE")) std::ofstream(path) << html;
}

TEST(heatmap, base64_floats_are_little_endian_ieee) {
  const float one[] = {1.0f};  // 0x3f800000: bytes 00 00 80 3f
  EXPECT_EQ(attn::viz::base64_floats(one, 1), "AACAPw==");
  const float two[] = {1.0f, -2.0f};  // … 00 00 00 c0
  EXPECT_EQ(attn::viz::base64_floats(two, 2), "AACAPwAAAMA=");
  const float three[] = {0.0f, 0.0f, 0.0f};
  EXPECT_EQ(attn::viz::base64_floats(three, 3), "AAAAAAAAAAAAAAAA");
  EXPECT_EQ(attn::viz::base64_floats(nullptr, 0), "");
}

TEST(heatmap, bad_shapes_and_heads_are_usage_errors) {
  attn::heatmap m = two_heads();
  m.keys.pop_back();
  EXPECT_THROW(attn::render_heatmap_svg(m), attn::error);
  m = two_heads();
  m.heads.clear();
  EXPECT_THROW(attn::render_heatmap_html(page_of(m)), attn::error);
  try {
    attn::select_head(two_heads(), 2);
    FAIL() << "no error";
  } catch (const attn::error& e) {
    EXPECT_EQ(e.kind(), attn::error_kind::usage);
    EXPECT_NE(std::string(e.what()).find("0 … 1"), std::string::npos) << e.what();
  }
  attn::heatmap_page page = page_of(two_heads());
  page.tables = {{"t", attn::tensor({2, 2}), {"a"}, {"b", "c"}}};
  EXPECT_THROW(attn::render_heatmap_html(page), attn::error);
}

TEST(heatmap, wide_tables_are_shortened) {
  attn::tensor wide({2, 40}, 0.5f);
  std::vector<std::string> cols;
  for (int j = 0; j < 40; ++j) cols.push_back("d" + std::to_string(j));
  attn::heatmap_page page = page_of(two_heads());
  page.tables = {{"E", wide, {"it", "<tired>"}, cols}};
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

namespace {

// A translation's links as lines between the two rows of words: one line per link in range
// (a link past either sentence's words is left out), the words escaped.
TEST(alignment_svg, a_line_per_link_in_range_and_the_words_escaped) {
  const std::string svg = attn::render_alignment_svg({"Ein", "Hund", "<bellt>"}, {"A", "dog", "barks", "."},
                                                     {{0, 0}, {1, 1}, {2, 2}, {2, 3}, {5, 0}, {0, 9}});
  size_t lines = 0;
  for (size_t at = svg.find("<line class=\"link\""); at != std::string::npos; at = svg.find("<line class=\"link\"", at + 1))
    ++lines;
  EXPECT_EQ(lines, 4u);
  EXPECT_NE(svg.find("&lt;bellt&gt;"), std::string::npos);
  EXPECT_EQ(svg.find("<bellt>"), std::string::npos);
  EXPECT_NE(svg.find("<title>2-3: &lt;bellt&gt; → .</title>"), std::string::npos);
  EXPECT_TRUE(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
}

}  // namespace
