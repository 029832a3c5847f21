// plot_text.h's reading of a table's numbers and columns, and the one way each kind of text
// reaches a gnuplot script (gp_string, one_line) or its data file (gp_data_text).
#include "postprocess/plot_text.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "text/error.h"
#include "text/text.h"

namespace sweepbench {
namespace {

namespace fs = std::filesystem;

}  // namespace

std::optional<double> number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !std::isfinite(v)) return std::nullopt;
  return v;
}

size_t column_index(const CsvTable& t, const std::string& name, const std::string& option) {
  auto it = std::find(t.columns.begin(), t.columns.end(), name);
  if (it != t.columns.end()) return static_cast<size_t>(it - t.columns.begin());
  std::string hint = "the columns are: " + join(t.columns, ", ");
  if (auto near = closest_match(name, t.columns)) hint = "did you mean '" + *near + "'? " + hint;
  throw Error::input(Mark::in(option + " " + name), "", "no column '" + name + "'", hint);
}

// Text into a gnuplot script: single-quoted strings, the one gnuplot form in which nothing is
// expanded (inside double quotes gnuplot runs `backquoted` commands). A quote ends one string and
// comes as "'" joined by gnuplot's `.` ('it' . "'" . 's'): a doubled quote, gnuplot's other
// escape, is read as an empty string when the text starts with one. A single-quoted string
// cannot span lines, so line breaks become spaces, and NUL (which would end the script's line) is
// left out. Every text from the table, the options or a path goes through here.
std::string gp_string(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "' . \"'\" . '";
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else if (c != '\0') {
      out += c;
    }
  }
  return out + "'";
}

// Text in a comment line: a line break would end the comment and make the rest a command.
std::string one_line(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\n' || c == '\r' || c == '\t') {
      out += ' ';
    } else if (c != '\0') {
      out += c;
    }
  }
  return out;
}

// Text as a field of the tab-separated data file: gnuplot reads data without expanding anything,
// but a tab or a line break would split the field and a double quote would end it.
std::string gp_data_text(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') {
      out += '\'';
    } else if (c == '\t' || c == '\n' || c == '\r') {
      out += ' ';
    } else if (c != '\0') {
      out += c;
    }
  }
  return out + "\"";
}

std::string terminal_for(const std::string& output) {
  std::string ext = fs::path(output).extension().string();
  if (ext == ".png") return "pngcairo size 900,560 enhanced font 'sans,10'";
  if (ext == ".svg") return "svg size 900,560 enhanced font 'sans,10'";
  if (ext == ".pdf") return "pdfcairo size 6in,3.75in enhanced font 'sans,9'";
  throw Error::input(Mark::in(output), "", "cannot tell the image format from '" + ext + "'",
                     "name the output .png, .svg or .pdf");
}

}  // namespace sweepbench
