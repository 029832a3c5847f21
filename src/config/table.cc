#include "config/table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "config/yaml_io.h"
#include "text/error.h"
#include "text/terminal.h"
#include "text/text.h"

namespace sweepbench {
namespace {

struct FormatName {
  TableFormat format;
  const char* name;
};
constexpr FormatName kFormatNames[] = {{TableFormat::kText, "table"},
                                       {TableFormat::kCsv, "csv"},
                                       {TableFormat::kJson, "json"},
                                       {TableFormat::kJsonl, "jsonl"},
                                       {TableFormat::kMarkdown, "md"}};

std::string names_of(const std::vector<TableFormat>& allowed) {
  std::vector<std::string> names;
  for (TableFormat f : allowed) names.push_back(table_format_name(f));
  if (names.size() > 1) return join({names.begin(), names.end() - 1}, ", ") + " or " + names.back();
  return names.empty() ? "" : names.front();
}

std::string markdown_cell(const std::string& s) {
  std::string o;
  for (char ch : s) {
    if (ch == '|') {
      o += "\\|";
    } else if (ch == '\n') {
      o += ' ';
    } else {
      o += ch;
    }
  }
  return o;
}

}  // namespace

std::string table_format_name(TableFormat format) {
  for (const FormatName& f : kFormatNames) {
    if (f.format == format) return f.name;
  }
  return "?";
}

TableFormat parse_table_format(const std::string& name, const std::vector<TableFormat>& allowed,
                               const std::string& option) {
  for (TableFormat f : allowed) {
    if (table_format_name(f) == name) return f;
  }
  throw Error::input(Mark::in(option + " " + name), "", "unknown format '" + name + "'",
                     "use " + names_of(allowed));
}

TableFormat table_format_of_path(const std::string& path, const std::vector<TableFormat>& allowed) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (TableFormat f : allowed) {
    if (f != TableFormat::kText && ext == "." + table_format_name(f)) return f;
  }
  std::vector<std::string> exts;
  for (TableFormat f : allowed) {
    if (f != TableFormat::kText) exts.push_back("." + table_format_name(f));
  }
  throw Error::input(Mark::in(path), "", "cannot tell the format from the extension '" + ext + "'",
                     "name the file " + join(exts, ", ") + ", or give --format");
}

std::string human_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v == 0) return "0";
  double a = std::fabs(v);
  char buf[64];
  if (a >= 1e15 || a < 1e-3) {
    std::snprintf(buf, sizeof(buf), "%.4g", v);
    return buf;
  }
  int magnitude = static_cast<int>(std::floor(std::log10(a)));
  int decimals = std::max(0, 3 - magnitude);
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  std::string text = buf;
  // Trailing zeros after the point say nothing for people ("2.500" is 2.5).
  if (text.find('.') != std::string::npos) {
    while (text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
  }
  return text;
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string spreadsheet_text(const std::string& text) {
  if (!text.empty() && std::string_view("=+-@\t\r").find(text[0]) != std::string_view::npos) {
    return "'" + text;
  }
  return text;
}

std::string cell_text(const Value& v, TableFormat format, bool round) {
  bool people = format == TableFormat::kText || format == TableFormat::kMarkdown;
  if (v.is_null()) return "";
  if (v.is_float()) {
    return round && people ? human_number(v.as_float()) : format_float_repr(v.as_float());
  }
  std::string text = v.is_string() ? v.as_string() : display_value(v);
  if (!people) return text;
  // For people, a cell is one line and never an escape sequence (text/terminal.h), and a list
  // or map (an argv, a metrics list) no wider than kMaxPeopleListWidth: its ends stay.
  text = terminal_safe(text, false);
  return v.is_list() || v.is_map() ? abbreviate_middle(text, kMaxPeopleListWidth) : text;
}

TableWidths::TableWidths(const std::vector<std::string>& columns) {
  for (const std::string& c : columns) widths_.push_back(display_width(c));
}

void TableWidths::add(const std::vector<Value>& cells, bool round) {
  for (size_t c = 0; c < cells.size() && c < widths_.size(); ++c) {
    widths_[c] =
        std::max(widths_[c], display_width(cell_text(cells[c], TableFormat::kText, round)));
  }
}

TableWriter::TableWriter(std::vector<std::string> columns, TableFormat format, std::ostream& out,
                         TableOptions options)
    : columns_(std::move(columns)), format_(format), out_(out), options_(std::move(options)) {
  switch (format_) {
    case TableFormat::kText:
      for (std::string& c : columns_) c = terminal_safe(c, false);
      if (options_.widths) text_line(columns_, true);
      return;
    case TableFormat::kCsv: {
      std::string line;
      for (size_t i = 0; i < columns_.size(); ++i) {
        if (i > 0) line += ',';
        line += csv_field(columns_[i]);
      }
      out_ << line << "\n";
      return;
    }
    case TableFormat::kMarkdown:
      out_ << "|";
      for (const std::string& c : columns_) {
        out_ << " " << markdown_cell(terminal_safe(c, false)) << " |";
      }
      out_ << "\n|";
      for (size_t i = 0; i < columns_.size(); ++i) out_ << "---|";
      out_ << "\n";
      return;
    case TableFormat::kJson:
    case TableFormat::kJsonl:
      return;
  }
}

void TableWriter::text_line(const std::vector<std::string>& cells, bool header) {
  if (cells.empty()) return;  // a table of no columns has no lines
  const std::vector<size_t>& width = *options_.widths;
  std::string line = header ? "#" : " ";
  // The first column is right-aligned, like a number; the rest are left-aligned.
  size_t first = std::max<size_t>(width[0] + 1, 6);  // with the '#' or ' ' before it
  line.append(first - 1 - std::min(first - 1, display_width(cells[0])), ' ');
  line += cells[0];
  for (size_t c = 1; c < cells.size(); ++c) {
    line += "  ";
    line += cells[c];
    if (c + 1 < cells.size() && width[c] > display_width(cells[c])) {
      line.append(width[c] - display_width(cells[c]), ' ');
    }
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();  // an empty last cell
  line += '\n';
  out_ << line;
}

void TableWriter::row(const std::vector<Value>& cells) {
  switch (format_) {
    case TableFormat::kText: {
      std::vector<std::string> texts;
      for (const Value& v : cells) texts.push_back(cell_text(v, format_, options_.round));
      if (options_.widths) {
        text_line(texts, false);
      } else {
        held_.push_back(std::move(texts));
      }
      break;
    }
    case TableFormat::kCsv: {
      std::string line;
      for (size_t i = 0; i < cells.size(); ++i) {
        if (i > 0) line += ',';
        std::string text = cell_text(cells[i], format_, false);
        // Numbers stay numbers (-1.5); text and lists are what a spreadsheet could run.
        bool number = cells[i].is_int() || cells[i].is_float();
        if (options_.spreadsheet_safe && !number) text = spreadsheet_text(text);
        line += csv_field(valid_utf8(text, &replaced_));
      }
      out_ << line << "\n";
      break;
    }
    case TableFormat::kMarkdown:
      out_ << "|";
      for (const Value& v : cells) {
        out_ << " " << markdown_cell(cell_text(v, format_, options_.round)) << " |";
      }
      out_ << "\n";
      break;
    case TableFormat::kJson:
    case TableFormat::kJsonl: {
      Value obj = Value::map();
      for (size_t i = 0; i < columns_.size() && i < cells.size(); ++i)
        obj.set(columns_[i], cells[i]);
      if (format_ == TableFormat::kJsonl) {
        out_ << emit_json(obj, -1) << "\n";  // one line per row
        break;
      }
      // What emit_json gives for the whole list, one element at a time.
      out_ << (rows_ == 0 ? "[" : ",") << "\n  " << emit_json(obj, 2, false, 1);
      break;
    }
  }
  ++rows_;
}

void TableWriter::finish() {
  if (format_ == TableFormat::kText && !options_.widths) {
    std::vector<size_t> width;
    for (const std::string& c : columns_) width.push_back(display_width(c));
    for (const auto& r : held_) {
      for (size_t c = 0; c < r.size() && c < width.size(); ++c) {
        width[c] = std::max(width[c], display_width(r[c]));
      }
    }
    options_.widths = width;
    text_line(columns_, true);
    for (const auto& r : held_) text_line(r, false);
    held_.clear();
  }
  if (format_ == TableFormat::kJson) out_ << (rows_ == 0 ? "[]\n" : "\n]\n");
  out_.flush();
}

CsvTable parse_csv(const std::string& text, const std::string& source) {
  CsvTable t;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, any = false;
  int line = 1;
  auto end_row = [&] {
    row.push_back(field);
    field.clear();
    if (t.columns.empty()) {
      t.columns = row;
    } else if (!(row.size() == 1 && row[0].empty())) {
      if (row.size() != t.columns.size()) {
        throw Error::input(Mark::in(source, line), "",
                           std::to_string(row.size()) + " fields, the header has " +
                               std::to_string(t.columns.size()),
                           "is it a bench-extract CSV?");
      }
      t.rows.push_back(row);
    }
    row.clear();
    any = false;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') ++line;
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
      any = true;
    } else if (c == ',') {
      row.push_back(field);
      field.clear();
      any = true;
    } else if (c == '\n') {
      end_row();
      ++line;
    } else if (c != '\r') {
      field += c;
      any = true;
    }
  }
  if (any || !field.empty()) end_row();
  if (t.columns.empty()) throw Error::input(Mark::in(source), "", "is empty");
  return t;
}

}  // namespace sweepbench
