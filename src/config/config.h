// Point configs: reading partial configs, --set overrides, resolving (the canonical form and hash
// are config_hash.h's).
//
// A *partial* config is what a user writes (base, a defaults file, an axis value, --set): nested
// sections with a subset of the keys, each key known to the schema and each value already of the
// schema's type. A *resolved* config has every key: schema defaults, then the partial configs in
// order, then derived values (model dimensions from model.preset, data.seq_len from
// model.block_size, eval.micro_batch from train.micro_batch), then cross-key checks.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config_hash.h"  // IWYU pragma: export (config_hash, the canonical text)
#include "config/model_shapes.h"
#include "config/value.h"

namespace sweepbench {

// Reads a partial config written with nested sections and/or dotted keys
// ("train: {lr: 1}" and "train.lr: 1" mean the same). `prefix` places it under a section or key
// ("container" for an axis over the whole container section). Unknown keys, wrong types, values
// out of range and a key given twice are errors that name file:line:column.
Value normalize_partial_config(const Value& node, std::string_view prefix = {});

// The leaf paths a partial config sets, in the order written (each entry of a map-typed key such
// as params or launch.env is one leaf: params.lr).
std::vector<std::string> partial_config_keys(const Value& partial);

// One `--set key=value`: the value is read as YAML (so `--set train.lr=1e-3` is a float and
// `--set container.binds=[a:b]` a list) and checked like any config value.
struct Override {
  std::string text;  // "train.lr=1e-3", for messages
  std::string key;
  Value partial;  // the override as a partial config
};
Override parse_override(const std::string& text);
std::vector<Override> parse_overrides(const std::vector<std::string>& texts);

// Schema defaults + partial + derived values; checks the cross-key rules.
Value resolve_config(const Value& partial);

// resolve_config for many partial configs one after another (a sweep's points), each into the
// same tree, which the caller leaves as the last call left it: of the schema's defaults only the
// top-level entries the last partial config set, or derived keys lie in, are copied back before
// the next is merged, into the storage they had (a tenth of the tree, and no allocations, where
// copying the whole defaults was a sixth of planning's time at 100,000 points). A tree of
// another layout, or another tree, gets the whole defaults.
class ConfigResolver {
 public:
  void resolve(const Value& partial, Value& full);

 private:
  const Value* last_ = nullptr;  // the tree of the last call
  std::vector<size_t> dirty_;    // its top-level entries that may differ from the defaults
};

// The model shape of a resolved config.
ModelShape model_shape_of(const Value& resolved);

// Nulls each derived key (KeySpec::derived) whose value equals what it would be derived as, so it
// is derived again from whatever its source becomes.
Value loosen_derived_keys(const Value& partial);

// Loads a point config file (as written by `bench-sweep plan --out`, or by hand), applies the
// overrides and resolves it. Derived values written out in the file follow their sources:
// `--set model.preset=llama-tiny` on a gpt2-tiny point gives a llama-tiny shape, while a
// model.n_layer that differs from its preset's stays. Used by bench-train and bench-infer, which
// say what they run in `load`.
struct PointLoad {
  // The kind the program runs: a config without the key `benchmark` is of that kind, one naming
  // another kind is an error. Empty: as the config says.
  std::string benchmark;
  // The ranks running (> 0): launch.ranks becomes this, so that what depends on it is checked
  // against the ranks that run; configured_ranks receives the value it had.
  std::int64_t running_ranks = 0;
  std::int64_t configured_ranks = 0;
};
Value load_point_config(const std::string& path, const std::vector<Override>& overrides,
                        PointLoad* load = nullptr);

// The columns of a table of points (bench-extract's, or its CSV) that vary over its rows, for
// the tables and figures people read: `first` (any columns, such as the sweeps' axes, in their
// order), then the config columns (schema keys and map entries such as params.x) in `columns`'
// order with derived keys last. A column whose set values are fewer than two (a key only some
// workloads read is empty in the others' rows) does not vary; one that groups the rows exactly
// as an earlier one (eval.micro_batch following train.micro_batch) is left out. `cell(row,
// column)` is a cell's text, "" when empty.
std::vector<std::string> varying_columns(
    const std::vector<std::string>& columns, size_t rows,
    const std::function<std::string(size_t row, const std::string& column)>& cell,
    const std::vector<std::string>& first = {});
// Whether a column of such a table is a config key (train.micro_batch, params.x).
bool is_config_column(const std::string& column);
// A column's last part, as people's tables and legends name it: seq_len of data.seq_len.
std::string short_key(const std::string& column);

// One entry of container.binds: "SRC", "SRC:DST" or "SRC:DST:ro|rw", with absolute paths.
struct BindSpec {
  std::string src, dst;
  bool read_only = false;
};
// nullopt when the text is not of that form.
std::optional<BindSpec> parse_bind_spec(const std::string& text);

}  // namespace sweepbench
