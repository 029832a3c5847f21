#include "fuzz/json_fuzz_entry.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "command/json_reader.h"
#include "config/value.h"
#include "config/yaml_io.h"
#include "os/fs.h"
#include "text/error.h"
#include "text/text.h"

namespace sweepbench {
namespace {

[[noreturn]] void broken(const std::string& what) {
  std::fprintf(stderr, "json fuzz: invariant broken: %s\n", what.c_str());
  std::abort();
}

// The values a pointer reaches, as bench-command's metrics resolve it: "*" takes every item or
// member; a list at the top with a token that is neither "*" nor an index is read as records.
void resolve(const Value& node, const std::vector<std::string>& tokens, size_t at, bool records,
             std::vector<const Value*>* out) {
  if (at == tokens.size()) {
    out->push_back(&node);
    return;
  }
  const std::string& t = tokens[at];
  if (t == "*") {
    for (const Value& item : node.items()) resolve(item, tokens, at + 1, records, out);
    for (const Value::Entry& e : node.entries()) resolve(e.value, tokens, at + 1, records, out);
    return;
  }
  if (node.is_map()) {
    if (const Value* v = node.find(t)) resolve(*v, tokens, at + 1, records, out);
  } else if (node.is_list()) {
    if (auto i = parse_int64(t); i && *i >= 0 && static_cast<size_t>(*i) < node.items().size()) {
      resolve(node.items()[static_cast<size_t>(*i)], tokens, at + 1, records, out);
    } else if (at == 0 && records) {
      for (const Value& item : node.items()) resolve(item, tokens, at, records, out);
    }
  }
}

const std::vector<std::vector<std::string>>& pointers() {
  static const std::vector<std::vector<std::string>> all = {
      {"a"},           {"0"},      {"*"},           {"a", "b"}, {"*", "b"},
      {"a", "*"},      {"1", "a"}, {"a", "2", "c"}, {"*", "*"}, {"avg_ts"},
      {"a", "*", "b"}, {"", "x"},  {"0", "0", "0"}};
  return all;
}

}  // namespace

void run_json_fuzz_input(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  JsonPatterns whole_patterns;
  whole_patterns.add({}, false);
  Value whole;
  const bool parsed = parse_json_text(text, whole_patterns, &whole);
  for (const std::vector<std::string>& tokens : pointers()) {
    for (bool records : {false, true}) {
      JsonPatterns patterns;
      patterns.add(tokens, records);
      Value pruned;
      const bool ok = parse_json_text(text, patterns, &pruned);
      // The kept part may nest 1,000 deep; the whole document's limit is the same, so a document
      // refused whole may be read pruned (what nests deep was not kept), never the other way.
      if (parsed && !ok) broken("the whole document parses, the pruned one does not");
      if (!parsed || !ok) continue;
      std::vector<const Value*> a, b;
      resolve(whole, tokens, 0, records, &a);
      resolve(pruned, tokens, 0, records, &b);
      const std::string which =
          " (/" + join(tokens, "/") + (records ? ", records" : "") + ": " +
          std::to_string(a.size()) + " values whole, " + std::to_string(b.size()) + " pruned)";
      if (a.size() != b.size()) broken("a pointer reaches another number of values" + which);
      // Compared as their JSON text, in order: Value's == looks members up by key, which a
      // document with a key twice (JSON allows it) defeats.
      for (size_t i = 0; i < a.size(); ++i) {
        if (emit_json(*a[i], 0) != emit_json(*b[i], 0)) {
          broken("a pointer reaches another value" + which);
        }
      }
    }
  }
  // The file reader, in both ways of reading lines: an Error is an answer, anything else not.
  char path[] = "/tmp/sweepbench-json-fuzz-XXXXXX";
  int fd = ::mkstemp(path);
  if (fd < 0) return;
  bool written = write_all(fd, text);
  ::close(fd);
  if (written) {
    for (JsonLines lines : {JsonLines::kAmongText, JsonLines::kEveryLine}) {
      JsonPatterns patterns;
      patterns.add({"a"}, true);
      patterns.add({"*", "b"}, true);
      size_t documents = 0;
      try {
        JsonFileRead r =
            read_json_documents(path, patterns, lines, [&](const Value&) { ++documents; });
        if (r.documents != documents) broken("the documents counted are not those given");
      } catch (const Error&) {
      }
    }
  }
  ::unlink(path);
}

}  // namespace sweepbench
