// The parts of an HTML report (docs/report.md): one self-contained file that opens from the file
// system with no server and no network. Figures are SVG drawn here, tables are HTML with a small
// inline script that sorts and filters them, and the page's Content-Security-Policy lets that one
// script run (by its hash) and nothing else: no other script, no event handler, no fetch, no
// image from anywhere. Every text that comes from results, configs, labels or the store reaches
// the page through html_escape() alone, and is shown, never run.
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace sweepbench {

// The one quoting function for HTML: & < > " ' as character references, so the text is the same
// in an element and in a quoted attribute. Invalid UTF-8 and NUL are replaced (U+FFFD) and
// other control characters but tab and newline are dropped: a browser would show them as nothing,
// or stop parsing at a NUL.
std::string html_escape(std::string_view text);

inline constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();

struct ChartPoint {
  double x = 0, y = 0;
  double low = kNoValue, high = kNoValue;  // an interval (error bar) where finite
  std::string tip;                         // shown on hover (an SVG <title>), plain text
  bool hollow = false;                     // drawn as a ring (a point off the Pareto front)
};

struct ChartSeries {
  std::string name;  // the legend's; "" for one unnamed series
  std::vector<ChartPoint> points;
  bool line = true;  // points joined in x order
};

// A vertical line at x: a change found (kind "worse" or "better") or an environment change
// ("environment"), with a short label above the plot and a tip.
struct ChartMark {
  double x = 0;
  std::string kind, label, tip;
};

// A horizontal segment: a level of a history between two changes.
struct ChartLevel {
  double x0 = 0, x1 = 0, y = 0;
};

struct Chart {
  std::string title, x_label, y_label;
  // Non-empty: x is an index into these labels (categories, or the runs of a history).
  std::vector<std::string> x_categories;
  bool log2_x = false;  // a numeric x whose values span powers of two (batch sizes, lengths)
  bool y_from_zero = true;
  std::vector<ChartSeries> series;
  std::vector<ChartMark> marks;
  std::vector<ChartLevel> levels;
};

// The chart as an inline <svg> element (with a caption and a legend when it has named series):
// axes with round ticks, each point with its tip and error bar, the marks and the levels. A chart
// with no finite point draws its frame and says "no values".
std::string svg_chart(const Chart& chart);

// A cell of a sortable table: the text shown and, where it is a number, the value it sorts by
// (the text's leading number otherwise). `css`: a class from the page's style ("bad", "good").
struct HtmlCell {
  std::string text;
  double sort = kNoValue;
  std::string tip, css;
};

struct HtmlTable {
  std::string id;  // the table's id: #sort=ID:COLUMN[:desc] in the page's address sorts it
  std::vector<std::string> columns;
  std::vector<std::vector<HtmlCell>> rows;
};

// A <table> that sorts by a column when its header is clicked (again: the other way) and, with
// `filter`, a box above it that keeps the rows containing what is typed.
std::string html_table(const HtmlTable& table, bool filter = true);

// The whole page: the title, the style, the body (HTML made with the functions above), and the
// script under its hash in the Content-Security-Policy.
std::string html_page(const std::string& title, const std::string& body);

// The script the page carries, and a text's hash as a Content-Security-Policy names it
// ("sha256-" and the SHA-256 digest in base64).
const std::string& report_script();
std::string csp_sha256(std::string_view text);

// A number for a cell or a tick: about four significant digits (config/table.h's human_number),
// "" for NaN.
std::string report_number(double v);

}  // namespace sweepbench
