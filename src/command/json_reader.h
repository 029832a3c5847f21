// JSON documents read from a program's output or a metric's file, once each, streamed
// (docs/commands.md, "JSON"; docs/security.md, "Reads").
//
// A file is parsed by nlohmann::json's SAX parser straight from its descriptor, whatever its
// size, and only what the metrics' pointers can reach is kept (JsonPatterns): a 4.5 MB vllm.json
// of 900,000 latencies costs the few fields its metrics name, not a tree of the whole document.
// A file that is not one document is read again as JSON lines. Python's NaN, Infinity and
// -Infinity (json.dump writes them) are read as the strings "NaN", "Infinity" and "-Infinity",
// which the metrics read as numbers. Leaves out: YAML, comments, anything that is not JSON.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "config/value.h"

namespace sweepbench {

// The parts of a document that are kept: each pattern is a JSON pointer's tokens (RFC 6901,
// unescaped), "*" standing for every member or item. A node is kept when its path is a prefix of
// a pattern (containers, with only the children a pattern reaches), or a pattern ends at or above
// it (the whole subtree). List items that are not kept stay as nulls, so indices keep their
// meaning.
class JsonPatterns {
 public:
  // A pointer's tokens. `records_too`: the pointer also applies to each item of a document that
  // is a list (llama-bench -o json's records), as json_values resolves it.
  void add(const std::vector<std::string>& tokens, bool records_too);
  bool empty() const { return patterns_.empty(); }

  enum class Reach { kNone, kPrefix, kWhole };
  // How far the patterns reach the node at `path` (keys, and list indices as numbers in text;
  // `index[i]` true where path[i] is a list index).
  Reach reach(const std::vector<std::string>& path, const std::vector<bool>& index) const;
  // The largest index a pattern reaches among the items of the list at `path`: -1 when none
  // does, INT64_MAX when one reaches every item ("*").
  std::int64_t last_index(const std::vector<std::string>& path,
                          const std::vector<bool>& index) const;

 private:
  struct Pattern {
    std::vector<std::string> tokens;
    bool root_list_only = false;  // applies below a root list's items (records_too)
  };
  // Whether the pattern's tokens match `path` as far as both go.
  static bool agrees(const Pattern& p, const std::vector<std::string>& path,
                     const std::vector<bool>& index);
  std::vector<Pattern> patterns_;
};

// How a file is read when it is not one JSON document.
enum class JsonLines {
  kAmongText,  // a program's output: each line that parses as a JSON object or list is one
               // document; other lines are passed over
  kEveryLine,  // a metric's file: every line that is not blank must be a document
};

// What reading one file found.
struct JsonFileRead {
  bool exists = true;
  size_t documents = 0;
  // A document cut short that is a list (a program killed while writing llama-bench -o json):
  // its complete items were given as documents, this many of them objects.
  size_t salvaged = 0;
  // kEveryLine: "line 3 is not JSON" (the documents before it were given); a read that failed:
  // "cannot be read: ..."; a document whose kept part nests past 1,000 levels: "nests deeper
  // than ..."; "" when the file read whole.
  std::string problem;
  bool stopped = false;  // a stop signal cut the reading (JsonStop)
};

// Asked every 1 MiB or so: true stops the reading there (a stop signal came).
using JsonStop = std::function<bool()>;

// Reads `path` once: as one document when it is one, else as JSON lines (`lines`), each document
// pruned to what `patterns` reach and given to `sink` in order. A file that is not a regular file
// is refused without blocking (os/fs.h): Error(kIo) naming it.
JsonFileRead read_json_documents(const std::string& path, const JsonPatterns& patterns,
                                 JsonLines lines, const std::function<void(const Value&)>& sink,
                                 const JsonStop& stop = {});

// One line of text as a JSON document pruned to `patterns`; false when it is not one.
bool parse_json_text(const std::string& text, const JsonPatterns& patterns, Value* out);

}  // namespace sweepbench
