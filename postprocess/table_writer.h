// bench-extract's printers: a table's rows in the format asked for (config/table.h's printers).
#pragma once

#include <cstddef>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "config/table.h"
#include "config/value.h"
#include "postprocess/extract_table.h"

namespace sweepbench {

// bench-extract's formats: csv, json, jsonl, md, table (config/table.h prints them; Markdown and
// the aligned table round floats for people, the others keep full precision; the aligned table
// holds its rows until the end, to align them).
const std::vector<TableFormat>& extract_formats();

// Prints rows as they come: the header first, then a row at a time, then what closes the table.
class ExtractWriter {
 public:
  ExtractWriter(std::vector<std::string> columns, TableFormat format, std::ostream& out,
                bool spreadsheet_safe = false);
  void row(const std::map<std::string, Value>& row);
  void finish() { writer_.finish(); }
  size_t replaced() const { return writer_.replaced(); }

 private:
  std::vector<std::string> columns_;
  TableWriter writer_;
  std::vector<Value> cells_;
};

// Returns ExtractWriter::replaced().
size_t print_table(const ExtractTable& table, TableFormat format, std::ostream& out,
                   bool spreadsheet_safe = false);

}  // namespace sweepbench
