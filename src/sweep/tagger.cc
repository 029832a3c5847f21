#include "sweep/tagger.h"

#include <algorithm>
#include <unordered_map>

#include "config/config.h"
#include "config/placeholders.h"
#include "config/schema.h"
#include "layout/paths.h"
#include "text/digest.h"
#include "text/text.h"
#include "text/user_regex.h"

namespace sweepbench {
namespace {

constexpr size_t kMaxValueText = 32;

bool tag_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '=' || c == '+' || c == '-';
}

// Characters a value may keep ('=' separates key from value, so values lose it).
bool value_char(char c) { return tag_char(c) && c != '='; }

// Reduces text to value characters, with no runs of '_' or '.' and no '.' or '_' at either end.
std::string sanitize(std::string_view text) {
  std::string out;
  for (char c : text) {
    char k = value_char(c) ? c : '_';
    if ((k == '_' || k == '.') && !out.empty() && out.back() == k) continue;
    out += k;
  }
  size_t b = out.find_first_not_of("._");
  if (b == std::string::npos) return "";
  size_t e = out.find_last_not_of("._");
  return out.substr(b, e - b + 1);
}

std::string raw_text(const Value& v) {
  switch (v.type()) {
    case Value::Type::kNull:
      return "none";
    case Value::Type::kList: {
      std::vector<std::string> parts;
      for (const Value& i : v.items()) parts.push_back(raw_text(i));
      return join(parts, "+");
    }
    case Value::Type::kMap: {
      std::vector<std::string> parts;
      for (const Value::Entry& e : v.entries()) parts.push_back(e.key + "-" + raw_text(e.value));
      std::sort(parts.begin(), parts.end());
      return join(parts, "+");
    }
    default:
      return scalar_text(v);
  }
}

// The label of a varying key in a readable tag: its last part, or section-last when two varying
// keys share a last part (train.micro_batch and eval.micro_batch).
std::vector<std::string> key_labels(const std::vector<std::string>& keys) {
  std::unordered_map<std::string, int> count;
  auto leaf = [](const std::string& k) { return k.substr(k.rfind('.') + 1); };
  for (const std::string& k : keys) ++count[leaf(k)];
  std::vector<std::string> labels;
  for (const std::string& k : keys) {
    if (count[leaf(k)] == 1) {
      labels.push_back(leaf(k));
    } else {
      std::string l = k;
      std::replace(l.begin(), l.end(), '.', '-');
      labels.push_back(l);
    }
  }
  return labels;
}

std::string repeat_suffix(std::int64_t repeat) { return ".r" + std::to_string(repeat); }

// `specs` and `is_entry`: what the schema says of each key (Schema::lookup's spec and kind).
std::string readable_tag(const TagInput& p, const std::vector<std::string>& keys,
                         const std::vector<std::string>& labels,
                         const std::vector<const KeySpec*>& specs,
                         const std::vector<bool>& is_entry, const TagOptions& options) {
  std::vector<std::string> parts;
  if (options.show_scenario) {
    std::string s = sanitize(p.scenario);
    if (!s.empty() && s[0] == '-') s = "s" + s;
    parts.push_back(s.empty() ? "scenario" : s);
  }
  const Value* benchmark = p.config->find_path("benchmark");
  std::vector<std::string> long_parts;
  for (size_t i = 0; i < keys.size(); ++i) {
    // A key this point's workload does not read, or a params entry it does not set, says
    // nothing about it.
    if (specs[i] != nullptr && benchmark != nullptr &&
        !specs[i]->applies_to(benchmark->as_string())) {
      continue;
    }
    const Value* v = p.config->find_path(keys[i]);
    if (v == nullptr && is_entry[i]) continue;
    if (options.long_keys.count(keys[i]) != 0) {
      // The scenario's name stands for it; without scenarios it goes last.
      if (!options.show_scenario) long_parts.push_back(labels[i] + "=" + tag_text(v ? *v : Value()));
      continue;
    }
    parts.push_back(labels[i] + "=" + tag_text(v ? *v : Value()));
  }
  parts.insert(parts.end(), long_parts.begin(), long_parts.end());
  std::string suffix = "ws=" + std::to_string(config_at(*p.config, "launch.ranks").as_int()) + "." +
                       p.config_hash.substr(0, 8);
  if (options.show_repeat) suffix += repeat_suffix(p.repeat);
  std::string readable = join(parts, ".");
  if (readable.empty()) return suffix;
  size_t room = kMaxTagLength - suffix.size() - 1;
  if (readable.size() > room) {
    readable.resize(room);
    size_t end = readable.find_last_not_of("._=+-");
    readable.resize(end == std::string::npos ? 0 : end + 1);
    if (readable.empty()) return suffix;
  }
  return readable + "." + suffix;
}

struct Placeholder {
  std::string path;
  bool indexed = false;
  size_t index = 0;
};

bool parse_placeholder(const std::string& name, Placeholder* out) {
  size_t bracket = name.find('[');
  out->path = name.substr(0, bracket);
  if (bracket == std::string::npos) return true;
  if (name.back() != ']') return false;
  auto idx = parse_int64(name.substr(bracket + 1, name.size() - bracket - 2));
  if (!idx || *idx < 0) return false;
  out->indexed = true;
  out->index = static_cast<size_t>(*idx);
  return true;
}

const std::vector<std::string> kSpecialPlaceholders = {"preset", "world_size", "hash", "repeat",
                                                       "scenario"};

bool known_placeholder(const std::string& name) {
  Placeholder ph;
  if (!parse_placeholder(name, &ph)) return false;
  if (std::find(kSpecialPlaceholders.begin(), kSpecialPlaceholders.end(), ph.path) !=
      kSpecialPlaceholders.end()) {
    return !ph.indexed;
  }
  Schema::Lookup found = Schema::get().lookup(ph.path);
  return found.kind == Schema::Lookup::Kind::kKey || found.kind == Schema::Lookup::Kind::kMapEntry;
}

std::string render(const std::vector<TagFormatPiece>& pieces,
                   const std::map<std::string, std::string>& values) {
  std::string out;
  for (const TagFormatPiece& piece : pieces) {
    out += piece.placeholder ? values.at(piece.text) : piece.text;
  }
  return out;
}

Error unknown_placeholders(const std::set<std::string>& unknown, const Mark& mark,
                           const std::string& hint) {
  return unknown_placeholders(unknown, mark, "tag.format", hint);
}

std::string format_tag(const std::vector<TagFormatPiece>& pieces, const TagInput& p,
                       const Mark& mark) {
  std::map<std::string, std::string> values;
  for (const TagFormatPiece& piece : pieces) {
    if (!piece.placeholder) continue;
    Placeholder ph;
    parse_placeholder(piece.text, &ph);
    std::string text;
    if (ph.path == "preset") {
      text = tag_text(config_at(*p.config, "model.preset"));
    } else if (ph.path == "world_size") {
      text = std::to_string(config_at(*p.config, "launch.ranks").as_int());
    } else if (ph.path == "hash") {
      text = p.config_hash.substr(0, 8);
    } else if (ph.path == "repeat") {
      text = std::to_string(p.repeat);
    } else if (ph.path == "scenario") {
      text = tag_text(Value::string(p.scenario));
    } else {
      const Value* v = p.config->find_path(ph.path);
      Value none;
      if (v == nullptr) v = &none;  // an absent map entry (launch.env.X) reads as none
      if (ph.indexed) {
        if (!v->is_list() || ph.index >= v->items().size()) {
          throw Error::input(mark, "tag.format",
                             "{" + piece.text + "} has no item " + std::to_string(ph.index) +
                                 " in " + p.description + " (" + ph.path + " is " + v->describe() +
                                 ")");
        }
        v = &v->items()[ph.index];
      }
      text = tag_text(*v);
    }
    values[piece.text] = text;
  }
  return render(pieces, values);
}

// `allowed`: the key names kept (fairseq2 0.3's allow-list); null keeps every key (0.8).
void collect_fairseq2(const Value& obj, const std::set<std::string>* allowed,
                      std::map<std::string, std::string>& tags, const std::string& path) {
  switch (obj.type()) {
    case Value::Type::kNull:
      tags[path] = "none";
      return;
    case Value::Type::kString:
      tags[path] = fairseq2_string_tag(obj.as_string());
      return;
    case Value::Type::kBool:
      tags[path] = obj.as_bool() ? "t" : "f";
      return;
    case Value::Type::kInt:
      tags[path] = std::to_string(obj.as_int());
      return;
    case Value::Type::kFloat:
      tags[path] = format_float_repr(obj.as_float());
      return;
    case Value::Type::kList:
      for (size_t i = 0; i < obj.items().size(); ++i) {
        collect_fairseq2(obj.items()[i], allowed, tags, path + "[" + std::to_string(i) + "]");
      }
      return;
    case Value::Type::kMap:
      for (const Value::Entry& e : obj.entries()) {
        if (allowed != nullptr && allowed->count(e.key) == 0) continue;
        collect_fairseq2(e.value, allowed, tags, path.empty() ? e.key : path + "." + e.key);
      }
      return;
  }
}

std::string fairseq2_hash(const std::map<std::string, std::string>& tags) {
  Sha1 sha;
  for (const auto& [key, value] : tags) {  // std::map iterates in sorted key order
    sha.update(key);
    sha.update(value);
  }
  return sha.hex_digest().substr(0, 8);
}

void check_safe(const std::string& tag, const TagInput& p, const Mark& mark) {
  std::string why;
  if (!is_safe_tag(tag, &why)) {
    throw Error::input(
        mark, "tag.format",
        "gives '" + tag + "' for " + p.description + ", which cannot be a directory name: " + why);
  }
}

}  // namespace

bool is_long_tag_value(const Value& value) {
  if (value.is_list() || value.is_map()) return true;
  return value.is_string() && value.as_string().size() > kLongTagValue;
}

std::vector<TagFormatPiece> parse_tag_format(const std::string& format, const Mark& mark) {
  return parse_placeholders(
      format, mark, "tag.format",
      [](char c) {
        return tag_char(c) ? std::string()
                           : "the character " + quote_json(std::string(1, c)) +
                                 " cannot be in a directory name";
      },
      "use letters, digits and . _ = + -");
}

bool is_safe_tag(std::string_view tag, std::string* why) {
  auto fail = [&](const std::string& reason) {
    if (why) *why = reason;
    return false;
  };
  if (tag.empty()) return fail("it is empty");
  if (tag.size() > kMaxTagLength) {
    return fail("it is " + std::to_string(tag.size()) + " characters long, more than " +
                std::to_string(kMaxTagLength));
  }
  for (size_t i = 0; i < tag.size();) {
    char c = tag[i];
    if (static_cast<unsigned char>(c) >= 0x80) {
      // Beyond ASCII, letters and numbers only (fairseq2 keeps them: `n_café`).
      size_t n = utf8_char_at(tag, i);
      if (n == 0 || !is_python_word_char(tag.substr(i, n))) {
        return fail("it contains " + quote_json(n == 0 ? std::string(1, c)
                                                       : std::string(tag.substr(i, n))));
      }
      i += n;
      continue;
    }
    if (!tag_char(c) && c != '{' && c != '}') {
      return fail("it contains " + quote_json(std::string(1, c)));
    }
    ++i;
  }
  if (tag[0] == '.' || tag[0] == '-')
    return fail("it starts with '" + std::string(1, tag[0]) + "'");
  if (tag.find("..") != std::string_view::npos) return fail("it contains '..'");
  // DIR/manifest.json, DIR/submit/ and a point's own entries (logs/, attempts/) are sweepbench's:
  // a point of that name ran, and bench-extract passed it over without a word.
  if (is_reserved_name(std::string(tag))) {
    return fail("'" + std::string(tag) +
                "' is a name sweepbench gives its own files and directories");
  }
  return true;
}

std::string tag_text(const Value& value) {
  std::string raw = raw_text(value);
  std::string text = sanitize(raw);
  if (text.empty()) text = raw.empty() ? "empty" : "x";
  if (text.size() > kMaxValueText) {
    // 23 characters of the value, '-', 8 hex digits of its hash: 32 in all, still distinct.
    text = text.substr(0, kMaxValueText - 9);
    size_t end = text.find_last_not_of("._");
    text = text.substr(0, end + 1) + "-" + sha1_hex(raw).substr(0, 8);
  }
  return text;
}

std::string fairseq2_string_tag(const std::string& s) {
  // re.sub(r"[^-_\w]", "", s), with Python's Unicode \w: letters and numbers of any script.
  std::string kept;
  size_t characters = 0;
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8_char_at(s, i);
    if (n == 0) {
      ++i;  // not UTF-8 (a config holds none): nothing fairseq2 could keep
      continue;
    }
    std::string_view c(s.data() + i, n);
    if (c == "-" || is_python_word_char(c)) {
      kept.append(c);
      ++characters;
    }
    i += n;
  }
  // len() counts characters, not bytes.
  if (characters >= 16) return sha1_hex(kept).substr(0, 8);
  return kept;
}

std::map<std::string, std::string> fairseq2_tag_dict(const std::string& preset,
                                                     std::int64_t world_size, const Value& config,
                                                     const std::set<std::string>& allowed) {
  std::map<std::string, std::string> tags{{"preset", preset},
                                          {"world_size", std::to_string(world_size)}};
  collect_fairseq2(config, &allowed, tags, "");
  tags["hash"] = fairseq2_hash(tags);
  return tags;
}

std::map<std::string, std::string> fairseq2_v08_tag_dict(std::int64_t world_size,
                                                         const Value& config) {
  std::map<std::string, std::string> tags{{"world_size", std::to_string(world_size)}};
  // Keys added after this style, at their default, are not part of the name.
  Value kept = config;
  for (const KeySpec& k : Schema::get().keys()) {
    if (!k.tagged_unless_default) continue;
    const Value* v = config.find_path(k.path);
    if (v == nullptr || !(*v == k.default_value)) continue;
    // The key's maps from the top (serve, serve.ready, ...): the leaf goes, then each map it
    // leaves empty, so that a section added whole after this style leaves no trace either.
    std::vector<Value*> maps = {&kept};
    std::vector<std::string> parts;
    for (size_t start = 0, dot;; start = dot + 1) {
      dot = k.path.find('.', start);
      parts.push_back(k.path.substr(start, dot == std::string::npos ? dot : dot - start));
      if (dot == std::string::npos) break;
    }
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      Value* next = maps.back()->find(parts[i]);
      if (next == nullptr || !next->is_map()) break;
      maps.push_back(next);
    }
    if (maps.size() != parts.size()) continue;
    maps.back()->erase(parts.back());
    for (size_t i = maps.size() - 1; i > 0 && maps[i]->entries().empty(); --i) {
      maps[i - 1]->erase(parts[i - 1]);
    }
  }
  collect_fairseq2(kept, nullptr, tags, "");
  tags["hash"] = fairseq2_hash(tags);
  return tags;
}

std::optional<std::string> fairseq2_preset(const Value& config) {
  // bench-train and bench-infer run a model preset; a command point runs the user's program,
  // whose recipe preset, if any, only its config can say (params.preset).
  const Value* benchmark = config.find_path("benchmark");
  const bool command = benchmark != nullptr && benchmark->is_string() &&
                       benchmark->as_string() == "command";
  const Value* preset = config.find_path(command ? "params.preset" : "model.preset");
  if (preset == nullptr || preset->is_null()) return std::nullopt;
  return preset->is_string() ? preset->as_string() : scalar_text(*preset);
}

Tagger::Tagger(const TagSpec& spec, const TagOptions& options) : spec_(spec), options_(options) {
  if (spec.style == TagSpec::Style::kFairseq2v08) {
    pieces_ = parse_tag_format(spec.format.value_or("ws_{world_size}.{hash}"), spec.format_mark);
    collision_hint_ = "add {hash} or the keys that vary (" + join(options.varying_keys, ", ") +
                      ") to tag.format";
  } else if (spec.style == TagSpec::Style::kFairseq2) {
    pieces_ = parse_tag_format(spec.format.value_or("ps_{preset}.ws_{world_size}.{hash}"),
                               spec.format_mark);
    allowed_ = std::set<std::string>(spec.keys.begin(), spec.keys.end());
    std::vector<std::string> names;
    for (const std::string& k : options.varying_keys) {
      for (const std::string& part : split_path(k)) {
        if (std::find(names.begin(), names.end(), part) == names.end()) names.push_back(part);
      }
    }
    collision_hint_ =
        "add the names of the keys that vary to tag.keys: [" + join(names, ", ") + "]";
  } else if (spec.format) {
    pieces_ = parse_tag_format(*spec.format, spec.format_mark);
    std::set<std::string> unknown;
    for (const TagFormatPiece& piece : pieces_) {
      if (!piece.placeholder) continue;
      if (!known_placeholder(piece.text)) unknown.insert(piece.text);
      if (piece.text == "repeat") has_repeat_placeholder_ = true;
    }
    if (!unknown.empty()) {
      throw unknown_placeholders(unknown, spec.format_mark,
                                 "a placeholder is preset, world_size, hash, repeat, scenario, "
                                 "or a config key such as train.micro_batch or a.b[1]");
    }
    collision_hint_ =
        "add {hash} or the keys that vary (" + join(options.varying_keys, ", ") + ") to tag.format";
  } else {
    for (const std::string& k : options.varying_keys) {
      if (k != "launch.ranks") keys_.push_back(k);  // the world size is always shown
    }
    labels_ = key_labels(keys_);
    for (const std::string& k : keys_) {
      Schema::Lookup found = Schema::get().lookup(k);
      key_specs_.push_back(found.spec);
      key_is_entry_.push_back(found.kind == Schema::Lookup::Kind::kMapEntry);
    }
    collision_hint_ = "values that differ only in characters a tag cannot hold; set tag.format";
  }
}

std::string Tagger::tag(const TagInput& p) const {
  if (spec_.style == TagSpec::Style::kFairseq2 || spec_.style == TagSpec::Style::kFairseq2v08) {
    const bool v08 = spec_.style == TagSpec::Style::kFairseq2v08;
    const std::int64_t world_size = config_at(*p.config, "launch.ranks").as_int();
    std::optional<std::string> preset;
    if (!v08) {
      preset = fairseq2_preset(*p.config);
      if (!preset) {
        throw Error::input(spec_.format_mark, "tag.style",
                           "fairseq2 (0.3) names a point by its recipe preset, and " +
                               p.description + " is a command point without params.preset",
                           "set params.preset (the preset the program runs), or use tag.style "
                           "fairseq2-0.8, which has none");
      }
    }
    std::map<std::string, std::string> dict =
        v08 ? fairseq2_v08_tag_dict(world_size, *p.config)
            : fairseq2_tag_dict(*preset, world_size, *p.config, allowed_);
    std::set<std::string> unknown;
    for (const TagFormatPiece& piece : pieces_) {
      if (piece.placeholder && dict.count(piece.text) == 0) unknown.insert(piece.text);
    }
    if (!unknown.empty()) {
      throw unknown_placeholders(
          unknown, spec_.format_mark,
          v08 ? "with tag.style fairseq2-0.8 a placeholder is world_size, hash or a config path "
                "(fairseq2 0.8 has no preset)"
              : "with tag.style fairseq2 a placeholder is preset, world_size, hash or a config "
                "path whose every part is in tag.keys");
    }
    std::string tag = render(pieces_, dict);
    if (options_.show_repeat) tag += repeat_suffix(p.repeat);
    check_safe(tag, p, spec_.format_mark);
    return tag;
  }
  if (spec_.format) {
    std::string tag = format_tag(pieces_, p, spec_.format_mark);
    if (options_.show_repeat && !has_repeat_placeholder_) tag += repeat_suffix(p.repeat);
    check_safe(tag, p, spec_.format_mark);
    return tag;
  }
  std::string tag = readable_tag(p, keys_, labels_, key_specs_, key_is_entry_, options_);
  std::string why;
  if (!is_safe_tag(tag, &why))
    throw std::logic_error("readable tag '" + tag + "' is unsafe: " + why);
  return tag;
}

Error Tagger::collision(const std::string& tag, const std::string& first,
                        const std::string& second) const {
  const Mark& mark = spec_.format ? spec_.format_mark : Mark{};
  return Error::input(mark, "tag",
                      "two points get the same tag '" + tag + "': " + first + ", and " + second,
                      collision_hint_);
}

}  // namespace sweepbench
