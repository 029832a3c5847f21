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

#include <string>
#include <string_view>
#include <vector>

#include "config/key_spec.h"
#include "config/value.h"

namespace sweepbench {

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
