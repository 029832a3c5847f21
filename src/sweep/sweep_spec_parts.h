// What parse_sweep's files share (sweep_spec.cc, sweep_dimensions.cc, sweep_settings.cc): the
// checks of a sweep file's values, and the readers of its parts: the dimensions and filters of a
// block (axes, zip, exclude, include) and the settings of the whole sweep (tag, repeats,
// memory_limit, references). Each throws Error(kInput) with the value's file:line:column.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/value.h"
#include "sweep/sweep_entries.h"
#include "text/error.h"

namespace sweepbench {

// ---- checks (sweep_spec.cc) ----

// The error for a key that `where` ("tag", "" for a mapping the message names itself) does not
// allow, naming the closest allowed one when one is plausible.
Error unknown_sweep_key(const std::string& where, const std::string& key, const Mark& mark,
                        const std::vector<std::string>& allowed);
// The value's own mark where it has one, else `fallback`.
const Mark& mark_or(const Value& v, const Mark& fallback);
std::string require_string(const Value& v, const std::string& key, const Mark& fallback);
const Value& require_list(const Value& v, const std::string& key, const Mark& fallback,
                          const std::string& hint = {});
// Every key of the mapping is one of `allowed`.
void check_name_keys(const Value& map, const std::string& where,
                     const std::vector<std::string>& allowed);

// ---- dimensions and filters (sweep_dimensions.cc) ----

std::vector<SweepDimension> parse_axes(const Value& axes, const Mark& fallback);
std::vector<SweepDimension> parse_zip(const Value& zip, const Mark& fallback);
std::vector<ExcludeRule> parse_excludes(const Value& excludes, const Mark& fallback);
std::vector<IncludeEntry> parse_includes(const Value& includes, const Mark& fallback);
// The entries of a mapping of config keys to values (an exclude entry, a reference's `when`) as
// the rule's matches; nested sections are flattened to dotted keys.
void flatten_exclude(const Value& node, const std::string& prefix, ExcludeRule& rule);
// Merges a scenario's own dimensions over the top-level ones; Error(kInput) for a key swept twice.
std::vector<SweepDimension> merge_dimensions(const std::vector<SweepDimension>& top,
                                             std::vector<SweepDimension> own);
// Whether one dotted key is the other or lies inside it ("train" and "train.lr").
bool overlaps(const std::string& a, const std::string& b);

// ---- settings of the whole sweep (sweep_settings.cc) ----

TagSpec parse_tag(const Value& tag, const Mark& fallback);
// repeats as a mapping; sets *most.
RepeatsRule parse_repeats_until(const Value& v, const Mark& fallback, std::int64_t* most);
std::optional<MemoryLimit> parse_memory_limit(const Value& v, const Mark& fallback);
std::vector<PerformanceReference> parse_references(const Value& references, const Mark& fallback);

}  // namespace sweepbench
