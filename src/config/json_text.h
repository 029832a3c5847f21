// A map's JSON text for many maps of one layout (a sweep's resolved configs), kept between
// calls: each entry's text, and each entry's of the non-empty maps in it (a config's sections),
// is written when its value changes and reused otherwise, so a point of `bench-sweep plan
// --format json` costs its changed keys and a copy of the rest (docs/performance.md, "Planning").
// Leaves out sorted keys and one-line JSON: it writes what emit_json(map, indent, false, level)
// writes, and that alone.
#pragma once

#include <string>
#include <vector>

#include "config/value.h"

namespace sweepbench {

// Whether two values are written alike: equal, and their maps' entries in the same order (which
// equality ignores). What a writer that keeps a value's text between calls checks (this one,
// and config_hash.h's CanonicalConfigText).
bool written_alike(const Value& a, const Value& b);

class JsonMapText {
 public:
  // indent >= 0: the lines' indentation, as emit_json's; level: the depth the map stands at.
  JsonMapText(int indent, int level) : indent_(indent), level_(level) {}
  // emit_json(map, indent, false, level), appended to `out`.
  void append(const Value& map, std::string& out);

 private:
  struct Entry {
    std::string key;
    std::string head;  // ",\n    \"key\": " as written before the value
    Value value;       // as last written
    std::string text;  // the value's JSON; empty: not written yet
    bool take(const Value& v, int indent, int level);
  };
  struct Top {
    Entry entry;                  // a section's: its key and head only
    bool block = false;           // a non-empty map, written entry by entry
    std::vector<Entry> children;  // block: entry order
    std::string joined;           // block: the section's text, its head to its closing brace
  };
  bool write(const Value& map, std::string& out);
  void learn(const Value& map);

  int indent_, level_;
  bool learnt_ = false;
  std::vector<Top> tops_;
};

}  // namespace sweepbench
