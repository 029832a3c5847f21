#include "config/schema.h"

#include <algorithm>

#include "config/schema_table.h"
#include "text/text.h"

namespace sweepbench {

bool KeySpec::applies_to(const std::string& benchmark) const {
  return only_for_benchmarks.empty() ||
         std::find(only_for_benchmarks.begin(), only_for_benchmarks.end(), benchmark) !=
             only_for_benchmarks.end();
}

std::string KeySpec::section() const {
  size_t dot = path.find('.');
  return dot == std::string::npos ? "" : path.substr(0, dot);
}

std::string KeySpec::name() const { return path.substr(path.find('.') + 1); }

const Schema& Schema::get() {
  static const Schema schema;
  return schema;
}

Schema::Schema() : keys_(build_table()), defaults_(Value::map()) {
  for (const KeySpec& k : keys_) {
    std::string section = k.section();
    if (!section.empty() &&
        std::find(sections_.begin(), sections_.end(), section) == sections_.end()) {
      sections_.push_back(section);
    }
    all_paths_.push_back(k.path);
    defaults_.set_path(k.path, k.default_value);
  }
  for (const std::string& s : sections_) all_paths_.push_back(s);
  for (const KeySpec& k : keys_) {
    for (size_t dot = k.path.find('.', k.section().size() + 1); dot != std::string::npos;
         dot = k.path.find('.', dot + 1)) {
      std::string sub = k.path.substr(0, dot);
      if (std::find(subsections_.begin(), subsections_.end(), sub) == subsections_.end()) {
        subsections_.push_back(sub);
        all_paths_.push_back(sub);
      }
    }
  }
}

const KeySpec* Schema::find(std::string_view path) const {
  for (const KeySpec& k : keys_) {
    if (k.path == path) return &k;
  }
  return nullptr;
}

bool Schema::is_section(std::string_view path) const {
  return std::find(sections_.begin(), sections_.end(), path) != sections_.end() ||
         std::find(subsections_.begin(), subsections_.end(), path) != subsections_.end();
}

Schema::Lookup Schema::lookup(std::string_view path) const {
  Lookup result;
  if (is_section(path)) {
    result.kind = Lookup::Kind::kSection;
    return result;
  }
  if (const KeySpec* spec = find(path)) {
    result.kind = Lookup::Kind::kKey;
    result.spec = spec;
    return result;
  }
  // An entry of a free-form map key: the longest prefix that is a map key.
  for (const KeySpec& k : keys_) {
    if ((k.type == KeyType::kStringMap || k.type == KeyType::kFreeMap) &&
        path.size() > k.path.size() + 1 && starts_with(path, k.path) &&
        path[k.path.size()] == '.') {
      result.kind = Lookup::Kind::kMapEntry;
      result.spec = &k;
      result.entry = std::string(path.substr(k.path.size() + 1));
      return result;
    }
  }
  return result;
}

Error Schema::unknown_key(std::string_view path, const Mark& mark) const {
  if (!is_key_like(path)) {
    return Error::input(mark, "",
                        "not a config key: a key is a name such as train.micro_batch (letters, "
                        "digits, '_', '-', '.'), and this text is none",
                        "is it a config or defaults file? they hold sections such as model:, "
                        "train:, launch: (docs/config.md)");
  }
  std::optional<std::string> suggestion = closest_match(path, all_paths_);
  if (!suggestion) {
    // "microbatch" alone: match the last part against every key's last part.
    std::string leaf(
        path.substr(path.rfind('.') == std::string_view::npos ? 0 : path.rfind('.') + 1));
    std::vector<std::string> names;
    for (const KeySpec& k : keys_) names.push_back(k.name());
    if (auto leaf_match = closest_match(leaf, names)) {
      for (const KeySpec& k : keys_) {
        if (k.name() == *leaf_match) {
          suggestion = k.path;
          break;
        }
      }
    }
  }
  std::string message = "unknown key '" + std::string(path) + "'";
  if (suggestion) message += " (did you mean '" + *suggestion + "'?)";
  return Error::input(mark, "", message,
                      suggestion ? ""
                                 : "`bench-sweep keys` lists every key; docs/config.md "
                                   "describes them");
}

}  // namespace sweepbench
