#include "config/placeholders.h"

#include "config/schema.h"
#include "text/text.h"

namespace sweepbench {

std::vector<TextPiece> parse_placeholders(const std::string& text, const Mark& mark,
                                          const std::string& key,
                                          const std::function<std::string(char)>& literal_ok,
                                          const std::string& literal_hint) {
  std::vector<TextPiece> pieces;
  std::string literal;
  auto flush = [&]() {
    if (!literal.empty()) pieces.push_back(TextPiece{false, literal});
    literal.clear();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '{') {
      if (i + 1 < text.size() && text[i + 1] == '{') {
        literal += '{';
        ++i;
        continue;
      }
      size_t close = text.find_first_of("{}", i + 1);
      if (close == std::string::npos || text[close] == '{') {
        throw Error::input(mark, key,
                           "'{' at position " + std::to_string(i) + " has no matching '}'",
                           "write {{ for a literal brace");
      }
      if (close == i + 1) {
        throw Error::input(mark, key, "empty placeholder {} at position " + std::to_string(i));
      }
      flush();
      pieces.push_back(TextPiece{true, text.substr(i + 1, close - i - 1)});
      i = close;
    } else if (c == '}') {
      if (i + 1 < text.size() && text[i + 1] == '}') {
        literal += '}';
        ++i;
        continue;
      }
      throw Error::input(mark, key, "'}' at position " + std::to_string(i) + " has no matching '{'",
                         "write }} for a literal brace");
    } else {
      if (literal_ok) {
        if (std::string why = literal_ok(c); !why.empty())
          throw Error::input(mark, key, why, literal_hint);
      }
      literal += c;
    }
  }
  flush();
  return pieces;
}

std::set<std::string> placeholder_names(const std::vector<TextPiece>& pieces) {
  std::set<std::string> names;
  for (const TextPiece& p : pieces) {
    if (p.placeholder) names.insert(p.text);
  }
  return names;
}

Error unknown_placeholders(const std::set<std::string>& unknown, const Mark& mark,
                           const std::string& key, const std::string& hint) {
  std::vector<std::string> names(unknown.begin(), unknown.end());  // std::set: already sorted
  return Error::input(
      mark, key,
      "unknown placeholder" + std::string(names.size() == 1 ? "" : "s") + ": " + join(names, ", "),
      hint);
}

std::string render_placeholders(const std::vector<TextPiece>& pieces,
                                const std::function<std::string(const std::string&)>& value_of) {
  std::string out;
  for (const TextPiece& piece : pieces)
    out += piece.placeholder ? value_of(piece.text) : piece.text;
  return out;
}

std::string placeholder_text(const Value& v) {
  if (!v.is_list()) return scalar_text(v);
  std::vector<std::string> items;
  for (const Value& item : v.items()) items.push_back(placeholder_text(item));
  return join(items, ",");
}

bool is_config_placeholder(const std::string& name) {
  Schema::Lookup found = Schema::get().lookup(name);
  return found.kind == Schema::Lookup::Kind::kKey || found.kind == Schema::Lookup::Kind::kMapEntry;
}

const Value* placeholder_config_value(const Value& resolved, const std::string& name) {
  static const Value none;
  if (!is_config_placeholder(name)) return nullptr;
  const Value* v = resolved.find_path(name);
  return v != nullptr ? v : &none;
}

}  // namespace sweepbench
