// One table model and one set of printers for every tabular output (the plan, `bench-sweep
// status`, bench-extract): columns, then rows of Values, streamed.
//
//   text      an aligned table for a terminal: a header line starting with '#', the first
//             column right-aligned (an index), the others left-aligned, two spaces between
//   csv       RFC 4180, one header row
//   json      one array of objects; jsonl: one object per line
//   markdown  a pipe table, '|' escaped
//
// Escaping lives here, per format. Text and Markdown are for people: with `round` they show
// floats to about four significant digits (human_number: "123.5", "0.01235"); CSV and JSON keep
// full precision (the shortest text that reads back to the same double).
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "config/value.h"

namespace sweepbench {

enum class TableFormat { kText, kCsv, kJson, kJsonl, kMarkdown };

// "table" (text), "csv", "json", "jsonl", "md"; Error(kInput) naming `option` and the formats in
// `allowed` otherwise.
TableFormat parse_table_format(const std::string& name, const std::vector<TableFormat>& allowed,
                               const std::string& option = "--format");
std::string table_format_name(TableFormat format);
// From a file's extension (.csv, .json, .jsonl, .md); Error(kInput) for the others.
TableFormat table_format_of_path(const std::string& path, const std::vector<TableFormat>& allowed);

// About four significant digits, fixed where that reads well: 123456 -> "123456", 123.456 ->
// "123.5", 0.0123456 -> "0.01235", 1.5e-05 -> "1.5e-05"; integers as they are.
std::string human_number(double v);

// CSV field quoting (RFC 4180).
std::string csv_field(const std::string& text);
// `text` as a spreadsheet shows it and never runs it: a leading ' when it begins with =, +, -,
// @, a tab or a carriage return (TableOptions::spreadsheet_safe).
std::string spreadsheet_text(const std::string& text);

struct TableOptions {
  bool round = false;  // text and Markdown: floats by human_number
  // Text: the column widths, when the caller measured the rows first (TableWidths) and wants
  // rows printed as they come; without them text rows are held until finish().
  std::optional<std::vector<size_t>> widths;
  // CSV: a text cell that a spreadsheet would take for a formula (it begins with =, +, -, @, a
  // tab or a carriage return) gets a leading ' (OWASP's advice on CSV injection). Numbers are
  // left as they are. Off by default: CSV keeps the data exact.
  bool spreadsheet_safe = false;
};

// How wide a list or map cell may be in the formats for people (text, Markdown): past it, its
// middle is cut ('…'); CSV and JSON keep it whole.
constexpr size_t kMaxPeopleListWidth = 48;

// A cell's text in `format` (before escaping): null is empty, strings as they are, floats in
// full or rounded, lists and maps by display_value (cut for people, above).
std::string cell_text(const Value& v, TableFormat format = TableFormat::kCsv, bool round = false);

// Measures rows for the text format, for TableOptions::widths.
class TableWidths {
 public:
  explicit TableWidths(const std::vector<std::string>& columns);
  void add(const std::vector<Value>& cells, bool round = false);
  const std::vector<size_t>& widths() const { return widths_; }

 private:
  std::vector<size_t> widths_;
};

// Prints a table as it comes: the header at construction, then a row at a time, then what
// closes the table at finish() (text without widths: everything at finish()).
class TableWriter {
 public:
  TableWriter(std::vector<std::string> columns, TableFormat format, std::ostream& out,
              TableOptions options = {});
  void row(const std::vector<Value>& cells);  // one cell per column, in order
  void finish();
  // CSV: how many bytes of the cells were not UTF-8 (or NUL) and were written as U+FFFD (JSON
  // writes each as \u00XX).
  size_t replaced() const { return replaced_; }

 private:
  void text_line(const std::vector<std::string>& cells, bool header);
  std::vector<std::string> columns_;
  TableFormat format_;
  std::ostream& out_;
  TableOptions options_;
  std::vector<std::vector<std::string>> held_;  // text rows waiting for their widths
  size_t rows_ = 0;
  size_t replaced_ = 0;
};

// A CSV table read back (bench-plot's and bench-compare's input): the header, then each row's
// fields as text.
struct CsvTable {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
};

// RFC 4180: quoted fields, doubled quotes, newlines inside quotes. Error(kInput) naming the file
// and line for a row whose field count differs from the header's.
CsvTable parse_csv(const std::string& text, const std::string& source);

}  // namespace sweepbench
