// The HTML report's parts: the one escaping function, the CSP hash, SVG charts and tables. The
// pages themselves are checked in a real browser (tests/postprocess/test_report.py).
#include "postprocess/report_html.h"

#include <gtest/gtest.h>

#include <string>

namespace sweepbench {
namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(HtmlEscape, LeavesNoMarkupAndNoControlCharacters) {
  EXPECT_EQ(html_escape(R"(<a href="x" onclick='y'>&</a>)"),
            "&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&lt;/a&gt;");
  // A NUL shows as U+FFFD (text/text.h's valid_utf8); ESC and DEL are dropped.
  EXPECT_EQ(html_escape(std::string("a\0b\x1b[31mc\td\ne\x7f", 14)),
            "a\xef\xbf\xbd"
            "b[31mc\td\ne");
  EXPECT_EQ(html_escape("caf\xc3\xa9 \xff"), "caf\xc3\xa9 \xef\xbf\xbd");  // é kept, 0xff replaced
}

TEST(CspHash, IsTheBase64OfTheSha256Digest) {
  // The digest of the empty text, and of "abc", as every CSP implementation computes them.
  EXPECT_EQ(csp_sha256(""), "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=");
  EXPECT_EQ(csp_sha256("abc"), "sha256-ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=");
  const std::string page = html_page("t", "<p>x</p>");
  EXPECT_NE(page.find("script-src '" + csp_sha256(report_script()) + "'"), std::string::npos);
  EXPECT_EQ(count(page, "<script>"), 1u);
}

TEST(SvgChart, DrawsEachFinitePointWithItsTipEscaped) {
  Chart c;
  c.title = "</svg><script>alert(1)</script>";
  ChartSeries s;
  s.name = "<b>series</b>";
  s.points = {{1, 10, 9, 11, "a <tip>", false},
              {2, 20, kNoValue, kNoValue, "b", true},
              {3, kNoValue, kNoValue, kNoValue, "not drawn", false}};
  c.series = {s};
  c.marks = {{1.5, "worse", "-7%", "x\"y"}};
  const std::string svg = svg_chart(c);
  EXPECT_EQ(count(svg, "<circle"), 2u);
  EXPECT_EQ(count(svg, "class=\"bar\""), 1u);  // only the first has an interval
  EXPECT_EQ(count(svg, "fill=\"#fff\""), 1u);  // the hollow one
  EXPECT_EQ(count(svg, "<script"), 0u);
  EXPECT_EQ(count(svg, "</svg>"), 1u);
  EXPECT_NE(svg.find("a &lt;tip&gt;"), std::string::npos);
  EXPECT_NE(svg.find("&lt;b&gt;series&lt;/b&gt;"), std::string::npos);
  EXPECT_NE(svg.find("class=\"mark worse\""), std::string::npos);
  EXPECT_EQ(svg.find("not drawn"), std::string::npos);
}

TEST(SvgChart, SaysSoWhenThereIsNothingToDraw) {
  Chart c;
  c.series = {{"", {{0, kNoValue, kNoValue, kNoValue, "", false}}, true}};
  EXPECT_NE(svg_chart(c).find("no values"), std::string::npos);
}

TEST(SvgChart, ALog2AxisTicksAtPowersOfTwo) {
  Chart c;
  c.log2_x = true;
  c.series = {
      {"", {{1, 1, kNoValue, kNoValue, "", false}, {64, 2, kNoValue, kNoValue, "", false}}, true}};
  const std::string svg = svg_chart(c);
  for (const char* tick : {">1<", ">2<", ">4<", ">8<", ">16<", ">32<", ">64<"}) {
    EXPECT_NE(svg.find(tick), std::string::npos) << tick;
  }
}

TEST(HtmlTable, SortsByTheValueAndShowsTheText) {
  HtmlTable t;
  t.id = "t\"1";
  t.columns = {"<name>", "value"};
  t.rows = {{{"<i>x</i>", kNoValue, "", ""}, {"1.5 ms", 0.0015, "tip's", "bad"}}};
  const std::string html = html_table(t);
  EXPECT_NE(html.find("id=\"t&quot;1\""), std::string::npos);
  EXPECT_NE(html.find("<th tabindex=\"0\" title=\"Sort by &lt;name&gt;\">&lt;name&gt;</th>"),
            std::string::npos);
  EXPECT_NE(html.find("<td class=\"bad\" data-v=\"0.0015\" title=\"tip&#39;s\">1.5 ms</td>"),
            std::string::npos);
  EXPECT_NE(html.find("<td>&lt;i&gt;x&lt;/i&gt;</td>"), std::string::npos);
}

}  // namespace
}  // namespace sweepbench
