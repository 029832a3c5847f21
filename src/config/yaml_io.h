// YAML in, canonical YAML and JSON out.
//
// Loading types plain scalars by the YAML 1.2 core schema (not yaml-cpp's YAML 1.1 habits):
// `1e-5` is a float, `010` is the integer 10, `yes` is a string, `~`/`null`/empty is null, and a
// quoted scalar is always a string. Explicit !!str/!!int/!!float/!!bool/!!null tags are honoured;
// other tags, duplicate keys, non-scalar keys and several documents are errors. Depth and size
// are bounded so hostile input (alias bombs, deep nesting) fails cleanly.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/value.h"

namespace sweepbench {

// Deep enough for any config (ours nest three levels); shallow enough that recursion is safe.
inline constexpr int kYamlMaxDepth = 64;

// Parses YAML text; `source` names it in error marks (a path, or "--set a.b=c").
Value parse_yaml(std::string_view text, const std::string& source);

// For text sweepbench wrote itself (config.yaml, status.json, manifests): the canonical YAML and
// the JSON below are read by a direct parser of that subset, about 20 times faster than yaml-cpp
// (bench-extract reads thousands of them); anything outside the subset (a comment after a value,
// block lists, anchors, a hand edit in another style) goes to parse_yaml. The Value is the one
// parse_yaml gives; marks name the source and the line only. Kept rather than nlohmann::json:
// that library's DOM turned into a Value was no faster on our JSON (0.84x to 1.45x of our time,
// slower in 7 of 9 runs), keeps no lines for the marks and reads no YAML (bench/own_reader_speed,
// docs/performance.md "Reading our own files", 2026-11-30).
Value parse_own_yaml(std::string_view text, const std::string& source);

// A short human description of a value for tables and messages: 8, 0.0003, bf16, [a, b].
// Strings that would read back as another type, or hold YAML's punctuation, are quoted.
std::string display_value(const Value& value);

// Reads and parses a file. `display` is how marks name it (default: the path as given).
Value load_yaml_file(const std::string& path, const std::string& display = {});

// Types one plain (unquoted) scalar by the YAML 1.2 core schema.
Value type_plain_scalar(const std::string& text, Mark mark);

// Canonical YAML: maps in block style with keys sorted bytewise, lists in JSON flow style,
// strings always double-quoted, floats as format_float_repr (.inf/.nan), no comments. Two equal
// Values always give the same text, and the text parses back to an equal Value.
// `skip`: dotted paths of the top level or one level down ("slurm.time") left out, as if they
// were erased first.
std::string emit_canonical_yaml(const Value& value, const std::vector<std::string>& skip = {});
// What emit_canonical_yaml writes for one entry of a map at `indent` spaces, appended to `out`:
// `key: value`, or `key:` and a non-empty map's block below it. For canonical text written a part
// at a time (config/config.h's CanonicalConfigText); the key alone as it writes it, for a section's
// `key:` line.
void append_canonical_yaml_entry(std::string& out, const std::string& key, const Value& value,
                                 int indent);
void append_canonical_yaml_key(std::string& out, const std::string& key);

// JSON. indent < 0: one line. sort_keys: bytewise; otherwise insertion order.
// Non-finite floats become null (JSON has no spelling for them).
// `level`: the nesting depth the value stands at, for its lines' indentation (a value written
// into a larger document one part at a time).
std::string emit_json(const Value& value, int indent = 2, bool sort_keys = false, int level = 0);

}  // namespace sweepbench
