#include <filesystem>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/yaml_io.h"
#include "postprocess/extract.h"
#include "postprocess/point_row.h"
#include "sweep/plan_output.h"

namespace sweepbench {

namespace fs = std::filesystem;

ExtractFormat parse_extract_format(const std::string& name) {
  if (name == "csv") return ExtractFormat::kCsv;
  if (name == "json") return ExtractFormat::kJson;
  if (name == "jsonl") return ExtractFormat::kJsonl;
  if (name == "md") return ExtractFormat::kMarkdown;
  throw Error::input(Mark::in("--format " + name), "", "unknown format '" + name + "'",
                     "use csv, json, jsonl or md");
}

ExtractFormat extract_format_of_path(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  if (ext.size() > 1) {
    try {
      return parse_extract_format(ext.substr(1));
    } catch (const Error&) {
    }
  }
  throw Error::input(Mark::in(path), "", "cannot tell the format from the extension '" + ext + "'",
                     "name the file .csv, .json, .jsonl or .md, or give --format");
}

namespace {

std::string markdown_cell(const std::string& s) {
  std::string o;
  for (char ch : s) {
    if (ch == '|')
      o += "\\|";
    else if (ch == '\n')
      o += ' ';
    else
      o += ch;
  }
  return o;
}

}  // namespace

TableWriter::TableWriter(std::vector<std::string> columns, ExtractFormat format, std::ostream& out)
    : columns_(std::move(columns)), format_(format), out_(out) {
  switch (format_) {
    case ExtractFormat::kCsv:
      for (size_t i = 0; i < columns_.size(); ++i) out_ << (i ? "," : "") << csv_field(columns_[i]);
      out_ << "\n";
      return;
    case ExtractFormat::kMarkdown:
      out_ << "|";
      for (const std::string& c : columns_) out_ << " " << markdown_cell(c) << " |";
      out_ << "\n|";
      for (size_t i = 0; i < columns_.size(); ++i) out_ << "---|";
      out_ << "\n";
      return;
    case ExtractFormat::kJson:
    case ExtractFormat::kJsonl:
      return;
  }
}

void TableWriter::row(const std::map<std::string, Value>& row) {
  auto cell = [&row](const std::string& c) {
    auto it = row.find(c);
    return it == row.end() ? Value::null() : it->second;
  };
  switch (format_) {
    case ExtractFormat::kCsv:
      for (size_t i = 0; i < columns_.size(); ++i) {
        out_ << (i ? "," : "") << csv_field(cell_text(cell(columns_[i])));
      }
      out_ << "\n";
      break;
    case ExtractFormat::kMarkdown:
      out_ << "|";
      for (const std::string& c : columns_)
        out_ << " " << markdown_cell(cell_text(cell(c))) << " |";
      out_ << "\n";
      break;
    case ExtractFormat::kJson:
    case ExtractFormat::kJsonl: {
      Value obj = Value::map();
      for (const std::string& c : columns_) obj.set(c, cell(c));
      if (format_ == ExtractFormat::kJsonl) {
        out_ << emit_json(obj, -1) << "\n";  // one line per point
        break;
      }
      // What emit_json gives for the whole list, one element at a time.
      std::string text = emit_json(obj, 2);
      out_ << (rows_ == 0 ? "[" : ",") << "\n  ";
      for (char ch : text) {
        out_ << ch;
        if (ch == '\n') out_ << "  ";
      }
      break;
    }
  }
  ++rows_;
}

void TableWriter::finish() {
  if (format_ == ExtractFormat::kJson) out_ << (rows_ == 0 ? "[]\n" : "\n]\n");
  out_.flush();
}

void print_table(const ExtractTable& t, ExtractFormat format, std::ostream& out) {
  TableWriter w(t.columns, format, out);
  for (const auto& row : t.rows) w.row(row);
  w.finish();
}

}  // namespace sweepbench
