#include "postprocess/table_writer.h"

#include <filesystem>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "config/yaml_io.h"
#include "sweep/plan_output.h"
#include "text/error.h"

namespace sweepbench {

namespace fs = std::filesystem;

const std::vector<TableFormat>& extract_formats() {
  static const std::vector<TableFormat> f = {TableFormat::kCsv, TableFormat::kJson,
                                             TableFormat::kJsonl, TableFormat::kMarkdown,
                                             TableFormat::kText};
  return f;
}

ExtractWriter::ExtractWriter(std::vector<std::string> columns, TableFormat format,
                             std::ostream& out, bool spreadsheet_safe)
    : columns_(columns),
      writer_(std::move(columns), format, out, TableOptions{true, {}, spreadsheet_safe}) {}

void ExtractWriter::row(const std::map<std::string, Value>& row) {
  cells_.clear();
  for (const std::string& c : columns_) {
    auto it = row.find(c);
    cells_.push_back(it == row.end() ? Value::null() : it->second);
  }
  writer_.row(cells_);
}

size_t print_table(const ExtractTable& t, TableFormat format, std::ostream& out,
                   bool spreadsheet_safe) {
  ExtractWriter w(t.columns, format, out, spreadsheet_safe);
  for (const auto& row : t.rows) w.row(row);
  w.finish();
  return w.replaced();
}

}  // namespace sweepbench
