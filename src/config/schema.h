// The config schema: every key a point's config may hold, with its type, default, allowed values
// or range, whether it enters config_hash, and a one-line description.
//
// Each key is declared once: a key that a section's field holds beside its field in
// config/settings.h; the others in schema_table.cc, which builds the table from both (the top
// level, the model's dimensions, the command section, and lora.targets, whose null needs the
// model). docs/config.md is generated from the table (`bench-sweep keys --format md`, a test
// fails when a key is missing there), validation (schema_coerce.cc) and the canonical form that
// config_hash reads follow it, and the typed Settings are read by it. Leaves out: cross-key rules
// (config.cc) and sweep-file keys (sweep_spec.cc).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/value.h"

namespace sweepbench {

struct Settings;

enum class KeyType {
  kInt,
  kFloat,
  kBool,
  kString,
  kEnum,        // a string from `choices`
  kStringList,  // a list of strings
  kNumberList,  // a list of numbers; one number is read as a list of it (serve.load.levels)
  kStringMap,   // a mapping of names to strings (scalars are written as text)
  kFreeMap,     // a mapping of free names to scalars or lists of scalars, kept as typed (params)
  kRecordList,  // a list of mappings, each checked by the code that reads it (command.metrics)
  kSlurmTime,   // SLURM's time formats, or an integer number of minutes
};

struct KeySpec {
  std::string path;  // "train.micro_batch"
  KeyType type = KeyType::kString;
  bool nullable = false;
  Value default_value;
  std::vector<std::string> choices;  // kEnum
  std::optional<double> min;
  bool min_exclusive = false;
  std::optional<double> max;
  bool max_exclusive = false;
  // false: the key only affects scheduling and cannot change a measurement; it is left out of
  // config_hash so that, e.g., raising a time limit does not orphan finished results.
  bool hashed = true;
  // true: the key enters config_hash only when it differs from its default. For keys added
  // after results exist whose default is what every earlier config meant (benchmark: train):
  // earlier configs keep their hash and tag, so their results stay found.
  bool hashed_unless_default = false;
  // true: tag.style fairseq2-0.8, whose tags take every key of the config, leaves the key out
  // while it is at its default: a key added after that style (launch.exclusive), so that the
  // tags of earlier points hold.
  bool tagged_unless_default = false;
  // Not empty: the key enters config_hash only when `benchmark` is one of these (a section that
  // only some workloads read: infer, or the model that bench-command never reads).
  std::vector<std::string> only_for_benchmarks;
  // true: null means "derived" (from the model preset or another key) and is filled in when the
  // config is resolved, so equal configs hash equal however they were written.
  bool derived = false;
  std::string description;
  // Where the key lives in the typed settings: reads its resolved value (and, for a key derived
  // from others, the whole resolved config) into its field. Empty for keys no field holds: the
  // model's dimensions (model_shape_of), params and the command section (CommandSpec).
  std::function<void(Settings& settings, const Value& value, const Value& config)> read;
  // The field's value as the config writes it (the inverse of read). Empty where read is empty
  // or needs more than the key's own value (lora.targets).
  std::function<Value(const Settings& settings)> write;

  // Whether a point whose `benchmark` is `benchmark` reads the key.
  bool applies_to(const std::string& benchmark) const;
  // "train" of "train.micro_batch"; "" for a top-level key such as "benchmark".
  std::string section() const;
  std::string name() const;
  // "integer >= 1", "one of fp32, bf16, fp16", "float > 0 or null" (for errors and docs).
  std::string type_text() const;
};

class Schema {
 public:
  static const Schema& get();

  const std::vector<KeySpec>& keys() const { return keys_; }
  const std::vector<std::string>& sections() const { return sections_; }
  const KeySpec* find(std::string_view path) const;
  // A section ("train") or a section inside one ("command.success").
  bool is_section(std::string_view path) const;

  struct Lookup {
    enum class Kind { kNone, kSection, kKey, kMapEntry } kind = Kind::kNone;
    const KeySpec* spec = nullptr;  // kKey, kMapEntry
    std::string entry;              // kMapEntry: the name under the map key
  };
  // A dotted path is a section ("train"), a key ("train.lr"), an entry of a free-form map key
  // ("launch.env.OMP_NUM_THREADS"), or unknown.
  Lookup lookup(std::string_view path) const;

  // The error for an unknown path, naming the closest known key when one is plausible.
  Error unknown_key(std::string_view path, const Mark& mark) const;

  // Checks `value` against the key's type and range and returns it in canonical type
  // (integers become floats for float keys; integers become text for SLURM times).
  Value coerce(const KeySpec& spec, const Value& value) const;
  // Coerces one entry of a map key: of launch.env.X any scalar, written as text; of params.x a
  // scalar or a list of scalars, as typed.
  Value coerce_map_entry(const KeySpec& spec, const std::string& entry, const Value& value) const;

  // Every key at its default, nested by section.
  const Value& defaults() const { return defaults_; }

 private:
  Schema();
  std::vector<KeySpec> keys_;
  std::vector<std::string> sections_;     // top level, in table order
  std::vector<std::string> subsections_;  // "command.success"
  std::vector<std::string> all_paths_;    // for suggestions
  Value defaults_;
};

}  // namespace sweepbench
