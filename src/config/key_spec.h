// One config key as the schema declares it (KeySpec) and the types a key may have (KeyType):
// what the schema (schema.h) holds and its table (schema_table.h) builds, in a header of its own
// so that the table need not include the schema. Its functions are schema.cc's (applies_to,
// section, name) and schema_coerce.cc's (type_text). Leaves out: the schema itself, its lookups
// and its checks (schema.h).
#pragma once

#include <functional>
#include <optional>
#include <string>
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

}  // namespace sweepbench
