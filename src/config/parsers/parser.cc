// parser.h's registry and the helpers every parser file uses.
#include "config/parsers/parser.h"

#include <algorithm>

namespace sweepbench {

const std::vector<Parser>& parsers() {
  static const std::vector<Parser> all = [] {
    std::vector<Parser> v = all_parsers();
    std::sort(v.begin(), v.end(), [](const Parser& a, const Parser& b) { return a.name < b.name; });
    return v;
  }();
  return all;
}

const Parser* find_parser(std::string_view name) {
  for (const Parser& p : parsers()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

MetricSpec parser_regex_metric(const std::string& parser, const std::string& name,
                               const std::string& unit, const std::string& regex,
                               MetricReduce reduce, bool required, MetricSource source) {
  MetricSpec m;
  m.name = name;
  m.unit = unit;
  m.source = source;
  m.regex = regex;
  m.reduce = reduce;
  m.required = required;
  m.parser = parser;
  return m;
}

MetricSpec parser_json_metric(const std::string& parser, const std::string& file,
                              const std::string& name, const std::string& unit,
                              const std::string& pointer, bool required, MetricReduce reduce) {
  MetricSpec m;
  m.name = name;
  m.unit = unit;
  m.source = MetricSource::kJson;
  m.file = file;
  m.pointer = pointer;
  m.reduce = reduce;
  m.required = required;
  m.parser = parser;
  return m;
}

}  // namespace sweepbench
