// {placeholders} in text: tag formats (sweep/tagger.h), a command's argv, env, workdir and metric
// files, and launch.setup lines (docs/commands.md).
//
// One grammar everywhere: `{name}` is a placeholder, `{{` and `}}` are literal braces, and an
// unmatched brace or an empty `{}` is an error naming the key. What a name may be, and what
// characters the literal text may hold, are the caller's: this file only splits and joins.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "config/value.h"
#include "text/error.h"

namespace sweepbench {

struct TextPiece {
  bool placeholder = false;
  std::string text;  // literal text, or the placeholder's name
};

// Splits `text` into literals and {placeholders}. `key` names the config key in errors;
// `literal_ok` (optional) refuses a literal character with the reason it returns non-empty (and
// `literal_hint`).
std::vector<TextPiece> parse_placeholders(
    const std::string& text, const Mark& mark, const std::string& key,
    const std::function<std::string(char)>& literal_ok = nullptr,
    const std::string& literal_hint = {});

// The placeholder names of `pieces`.
std::set<std::string> placeholder_names(const std::vector<TextPiece>& pieces);

// The error for unknown placeholders: their names sorted, and what a placeholder may be.
Error unknown_placeholders(const std::set<std::string>& unknown, const Mark& mark,
                           const std::string& key, const std::string& hint);

// Joins the pieces, each placeholder replaced by `value_of(name)`.
std::string render_placeholders(const std::vector<TextPiece>& pieces,
                                const std::function<std::string(const std::string&)>& value_of);

// A config value as placeholder text: strings as they are, numbers as YAML writes them, booleans
// true/false, null as nothing, a list's items joined by ','.
std::string placeholder_text(const Value& value);

// A config key's value for a placeholder {a.b}: a schema key or an entry of a map key
// (params.x, launch.env.X; an absent entry reads as null). nullptr: no such key.
const Value* placeholder_config_value(const Value& resolved, const std::string& name);
// Whether {name} names a config key (as above).
bool is_config_placeholder(const std::string& name);

}  // namespace sweepbench
