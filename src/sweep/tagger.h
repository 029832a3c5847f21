// The sweep tagger: each point's directory name under the output root.
//
// Three styles (docs/sweeps.md, "Tags"):
//  - readable (default): the varying keys' values, the world size and the first 8 hex digits of
//    config_hash, e.g. `micro_batch=8.seq_len=1024.ws=2.3f9a1c0e`;
//  - readable with tag.format: placeholders {train.micro_batch}, {a.b[1]}, {preset},
//    {world_size}, {hash}, {repeat}, {scenario};
//  - fairseq2: fairseq2 v0.3's StandardSweepTagger, reproduced exactly;
//  - fairseq2-0.8: fairseq2 0.8's _StandardSweepTagGenerator (every key, no preset).
// Every tag is checked to be a safe directory name, and two points never share one.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "config/placeholders.h"
#include "config/value.h"
#include "sweep/sweep_spec.h"

namespace sweepbench {

struct KeySpec;

constexpr size_t kMaxTagLength = 120;

using TagFormatPiece = TextPiece;

// Splits a format into literals and {placeholders}; {{ and }} are literal braces. Unmatched
// braces, an empty {} and literal characters that cannot be in a directory name are errors.
std::vector<TagFormatPiece> parse_tag_format(const std::string& format, const Mark& mark);

// 1 to 120 characters from [A-Za-z0-9._=+-] (and braces, which only {{ }} can produce), no "..",
// not starting with '.' or '-', and not a name sweepbench uses itself (layout/paths.h's
// is_reserved_name: manifest.json, submit, logs, attempts, ...). `why` (optional) receives the
// reason when it is not.
bool is_safe_tag(std::string_view tag, std::string* why = nullptr);

// A value as tag text: numbers as Python prints them, strings reduced to [A-Za-z0-9._+-]
// (other characters become '_'), lists joined with '+'; long results are shortened to 32
// characters ending in a hash of the whole, so they stay distinct.
std::string tag_text(const Value& value);

// fairseq2's tag dictionary for a config: {preset, world_size} plus the config flattened through
// the allowed key names; then its 8-digit sha1 "hash" entry.
std::map<std::string, std::string> fairseq2_tag_dict(const std::string& preset,
                                                     std::int64_t world_size, const Value& config,
                                                     const std::set<std::string>& allowed);
// fairseq2 0.8's: {world_size} plus every key of the config flattened (no allow-list, no
// preset); then its "hash".
std::map<std::string, std::string> fairseq2_v08_tag_dict(std::int64_t world_size,
                                                         const Value& config);
// The preset fairseq2 (0.3) tags name: model.preset for bench-train and bench-infer points,
// params.preset for a command point (none when it has no such entry).
std::optional<std::string> fairseq2_preset(const Value& config);
// fairseq2's rendering of a string value (re.sub(r"[^-_\w]", "", s) with Python's Unicode \w:
// letters and numbers of every script, '_' and '-'); if 16 or more characters remain, the first
// 8 hex digits of their sha1.
std::string fairseq2_string_tag(const std::string& s);

struct TagInput {
  const Value* config = nullptr;  // resolved
  std::string scenario;
  std::int64_t repeat = 0;
  std::string config_hash;
  std::string description;  // names the point in collision errors
};

struct TagOptions {
  std::vector<std::string> varying_keys;  // hashed keys whose values differ across the sweep
  bool show_scenario = false;             // the sweep has several scenarios
  bool show_repeat = false;               // repeats > 1
  // Varying keys with a value too long to spell (a list, a map, or text past
  // kLongTagValue characters: an argv, a metrics list, setup lines). With scenarios, the
  // scenario's name stands for them and the tag leaves them out; without, they come after the
  // other keys, so that a cut at kMaxTagLength never takes a short axis.
  std::set<std::string> long_keys;
};

// Text values longer than this are "long" (TagOptions::long_keys).
constexpr size_t kLongTagValue = 24;
// Whether `value` is too long to spell in a tag.
bool is_long_tag_value(const Value& value);

// One point's tag at a time, for a sweep whose varying keys are known (the plan streams its
// points through one). The constructor checks the format (unknown placeholders); tag() throws an
// Error for an unsafe tag; collisions are the caller's to find (collision() is their error).
class Tagger {
 public:
  Tagger(const TagSpec& spec, const TagOptions& options);
  std::string tag(const TagInput& point) const;
  Error collision(const std::string& tag, const std::string& first_description,
                  const std::string& second_description) const;

 private:
  TagSpec spec_;
  TagOptions options_;
  std::vector<TagFormatPiece> pieces_;
  std::set<std::string> allowed_;  // fairseq2: tag.keys
  bool has_repeat_placeholder_ = false;
  std::vector<std::string> keys_, labels_;  // readable: the keys shown and their labels
  std::vector<const KeySpec*> key_specs_;   // readable: each key's, asked of the schema once
  std::vector<bool> key_is_entry_;          // readable: each key an entry of a map key
  std::string collision_hint_;
};

}  // namespace sweepbench
