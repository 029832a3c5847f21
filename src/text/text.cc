#include "text/text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <sstream>

namespace sweepbench {

std::string format_float_repr(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";

  // Shortest round-trip digits, in scientific form: "-1.2345e+02".
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  std::string sci(buf, res.ptr);

  bool negative = sci[0] == '-';
  if (negative) sci.erase(0, 1);
  size_t e_pos = sci.find('e');
  std::string mantissa = sci.substr(0, e_pos);
  int exponent = std::stoi(sci.substr(e_pos + 1));
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits += c;
  }
  // Python's repr (float_repr_style 'short'): decpt is where the decimal point falls in the
  // digit string; scientific when decpt <= -4 or decpt > 16.
  int decpt = exponent + 1;
  std::string out = negative ? "-" : "";
  if (decpt <= -4 || decpt > 16) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char exp_buf[16];
    std::snprintf(exp_buf, sizeof(exp_buf), "e%c%02d", exponent < 0 ? '-' : '+',
                  exponent < 0 ? -exponent : exponent);
    out += exp_buf;
  } else if (decpt <= 0) {
    out += "0." + std::string(static_cast<size_t>(-decpt), '0') + digits;
  } else if (static_cast<size_t>(decpt) >= digits.size()) {
    out += digits + std::string(static_cast<size_t>(decpt) - digits.size(), '0') + ".0";
  } else {
    out += digits.substr(0, static_cast<size_t>(decpt)) + "." +
           digits.substr(static_cast<size_t>(decpt));
  }
  return out;
}

namespace {}  // namespace

size_t utf8_char_at(std::string_view s, size_t i, char32_t* code_point) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  size_t len = 0;
  std::uint32_t cp = 0;
  if (c < 0x80) {
    if (code_point != nullptr) *code_point = c;
    return 1;
  }
  if ((c & 0xE0) == 0xC0) {
    len = 2;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    len = 3;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    len = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  // Reject overlong forms, surrogates and values past U+10FFFF.
  if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
      (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) {
    return 0;
  }
  if (code_point != nullptr) *code_point = cp;
  return len;
}

namespace {

size_t utf8_sequence_length(std::string_view s, size_t i) { return utf8_char_at(s, i, nullptr); }

}  // namespace

size_t find_invalid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t len = utf8_sequence_length(s, i);
    if (len == 0) return i;
    i += len;
  }
  return std::string_view::npos;
}

std::string valid_utf8(std::string_view s, size_t* replaced) {
  if (find_invalid_utf8(s) == std::string_view::npos && s.find('\0') == std::string_view::npos) {
    return std::string(s);
  }
  std::string out;
  for (size_t i = 0; i < s.size();) {
    size_t len = utf8_sequence_length(s, i);
    if (len == 0 || s[i] == '\0') {
      out += "\xEF\xBF\xBD";  // U+FFFD
      if (replaced != nullptr) ++*replaced;
      ++i;
    } else {
      out.append(s.substr(i, len));
      i += len;
    }
  }
  return out;
}

void append_quoted_json(std::string& out, std::string_view s) {
  // Most keys and values need no escape: copy them whole.
  bool plain = std::all_of(s.begin(), s.end(), [](char ch) {
    unsigned char c = static_cast<unsigned char>(ch);
    return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
  });
  out += '"';
  if (plain) {
    out.append(s);
    out += '"';
    return;
  }
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      size_t len = utf8_sequence_length(s, i);
      if (len == 0) {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\u%04x", c);
        out += buf;
        ++i;
      } else {
        out.append(s.substr(i, len));
        i += len;
      }
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  out += '"';
}

std::string quote_json(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  append_quoted_json(out, s);
  return out;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + cost});
      diag = up;
    }
  }
  return row[b.size()];
}

std::optional<std::string> closest_match(std::string_view word,
                                         const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  size_t best_distance = 0;
  for (const std::string& c : candidates) {
    size_t d = edit_distance(word, c);
    if (!best || d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  // A plausible typo changes at most a third of the word (and at least two edits are allowed).
  size_t allowed = std::max<size_t>(2, word.size() / 3);
  if (best && best_distance <= allowed) return best;
  return shortened_match(word, candidates);
}

namespace {

// A name's parts between '_' and '.': train_tokens_per_second -> train tokens per second.
std::vector<std::string_view> name_parts(std::string_view name) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t i = 0; i <= name.size(); ++i) {
    if (i == name.size() || name[i] == '_' || name[i] == '.') {
      if (i > start) parts.push_back(name.substr(start, i - start));
      start = i + 1;
    }
  }
  return parts;
}

}  // namespace

std::optional<std::string> shortened_match(std::string_view word,
                                           const std::vector<std::string>& candidates) {
  const std::vector<std::string_view> want = name_parts(word);
  if (want.size() < 2) return std::nullopt;  // one word would fit too much
  std::optional<std::string> best;
  size_t best_extra = 0;
  for (const std::string& c : candidates) {
    const std::vector<std::string_view> have = name_parts(c);
    // Each part of the word starts a part of the candidate, in order, none skipped between.
    bool found = false;
    for (size_t at = 0; !found && at + want.size() <= have.size(); ++at) {
      found = true;
      for (size_t k = 0; found && k < want.size(); ++k) {
        found = starts_with(have[at + k], want[k]);
      }
    }
    if (!found) continue;
    const size_t extra = have.size() - want.size();
    if (!best || extra < best_extra) {
      best = c;
      best_extra = extra;
    }
  }
  return best;
}

std::string byte_size(double bytes, bool binary) {
  static const char* const kBinary[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  static const char* const kDecimal[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  const double step = binary ? 1024 : 1000;
  double v = bytes;
  int u = 0;
  while (std::fabs(v) >= step && u < 5) {
    v /= step;
    ++u;
  }
  // Three figures; rounding up to the step (1023.7 MiB) goes to the next unit (1.00 GiB).
  auto text = [](double x) {
    char b[32];
    const double a = std::fabs(x);
    std::snprintf(b, sizeof b, a >= 99.95 ? "%.0f" : a >= 9.995 ? "%.1f" : "%.2f", x);
    return std::string(b);
  };
  if (u < 5 && std::fabs(std::stod(text(v))) >= step) {
    v /= step;
    ++u;
  }
  if (u == 0) return text(v).substr(0, text(v).find('.')) + " B";
  return text(v) + " " + (binary ? kBinary : kDecimal)[u];
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += sep;
    out += parts[i];
  }
  return out;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.substr(0, prefix.size()) == prefix;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string trim(std::string_view s) {
  size_t b = 0;
  size_t e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\n' || s[b] == '\r')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\n' || s[e - 1] == '\r'))
    --e;
  return std::string(s.substr(b, e - b));
}

std::string to_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string to_upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

std::optional<std::int64_t> parse_int64(std::string_view s, int base) {
  if (s.empty()) return std::nullopt;
  bool negative = false;
  if (s[0] == '+' || s[0] == '-') {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return std::nullopt;
  std::uint64_t magnitude = 0;
  auto res = std::from_chars(s.data(), s.data() + s.size(), magnitude, base);
  if (res.ec != std::errc() || res.ptr != s.data() + s.size()) return std::nullopt;
  constexpr std::uint64_t kMaxPositive = 9223372036854775807ULL;
  if (negative) {
    if (magnitude > kMaxPositive + 1) return std::nullopt;
    if (magnitude == kMaxPositive + 1) return INT64_MIN;
    return -static_cast<std::int64_t>(magnitude);
  }
  if (magnitude > kMaxPositive) return std::nullopt;
  return static_cast<std::int64_t>(magnitude);
}

std::optional<double> parse_double(std::string_view s) {
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  if (s.empty()) return std::nullopt;
  double value = 0;
  auto res = std::from_chars(s.data(), s.data() + s.size(), value);
  if (res.ec == std::errc::result_out_of_range) {
    // from_chars leaves value untouched on overflow/underflow; YAML wants inf or 0.
    if (res.ptr != s.data() + s.size()) return std::nullopt;
    bool negative = s[0] == '-';
    size_t e = s.find_first_of("eE");
    bool tiny = e != std::string_view::npos && e + 1 < s.size() && s[e + 1] == '-';
    if (tiny) return negative ? -0.0 : 0.0;
    return negative ? -HUGE_VAL : HUGE_VAL;
  }
  if (res.ec != std::errc() || res.ptr != s.data() + s.size()) return std::nullopt;
  return value;
}

bool is_key_like(std::string_view text) {
  if (text.empty() || text.size() > 100) return false;
  for (char c : text) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

std::string plural(size_t n, std::string_view singular, std::string_view plural_form) {
  std::string word =
      n == 1 ? std::string(singular)
             : (plural_form.empty() ? std::string(singular) + "s" : std::string(plural_form));
  return std::to_string(n) + " " + word;
}

std::string utc_now_iso8601() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string with_commas(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.0f", v);
  std::string digits(buf);
  std::string out;
  size_t start = digits[0] == '-' ? 1 : 0;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > start && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::vector<std::string> split_commas(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const std::string& v : values) {
    size_t start = 0;
    while (start <= v.size()) {
      size_t comma = v.find(',', start);
      std::string part = trim(v.substr(start, comma == std::string::npos ? comma : comma - start));
      if (!part.empty()) out.push_back(part);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return out;
}

bool is_identifier(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    bool ok =
        (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

std::string first_line(const std::string& text, size_t max) {
  std::string line = text.substr(0, text.find('\n'));
  return line.size() > max ? line.substr(0, max) + "..." : line;
}

bool is_help_pointer(std::string_view line) {
  return starts_with(line, "Try ") && line.find(" --help") != std::string_view::npos &&
         line.find("for more information") != std::string_view::npos;
}

std::string last_said(const std::string& text) {
  auto is_rule = [](const std::string& t) {
    return t.size() >= 10 && t.find_first_not_of('-') == std::string::npos;
  };
  // Open MPI's notes after its messages say nothing of the failure: "[vm:123] 1 more process has
  // sent help message ..." and "Set MCA parameter "orte_base_help_aggregate" to 0 ...".
  auto is_aside = [](const std::string& t) {
    return t.find("sent help message") != std::string::npos ||
           t.find("\"orte_base_help_aggregate\"") != std::string::npos || is_help_pointer(t);
  };
  std::string last, block_first, before_block;
  bool in_block = false, block_paragraph = false, ends_with_rule = false;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const std::string said = trim(line);
    if (is_rule(said)) {
      in_block = !in_block;
      if (in_block) {
        block_first.clear();
        before_block = last;
      }
      block_paragraph = in_block;
      ends_with_rule = true;
      continue;
    }
    if (is_aside(said)) continue;
    if (std::any_of(said.begin(), said.end(), [](unsigned char c) { return std::isalnum(c); })) {
      last = said;
      ends_with_rule = false;
    }
    if (in_block && block_paragraph) {
      if (said.empty() && !block_first.empty()) {
        block_paragraph = false;
      } else if (!said.empty()) {
        block_first += (block_first.empty() ? "" : " ") + said;
      }
    }
  }
  if (!ends_with_rule || block_first.empty()) return last;
  // MPI_ABORT's notice says only that a rank aborted: what the program said before it is why.
  if (starts_with(block_first, "MPI_ABORT was invoked") && !before_block.empty()) {
    return before_block;
  }
  return block_first;
}

std::string abbreviate_middle(const std::string& text, size_t max) {
  // Count and cut by characters, not bytes: a cut never splits one.
  std::vector<size_t> starts;
  for (size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) starts.push_back(i);
  }
  if (starts.size() <= max || max < 3) return text;
  size_t head = (max - 1) * 2 / 3, tail = max - 1 - head;
  return text.substr(0, starts[head]) + "…" + text.substr(starts[starts.size() - tail]);
}

size_t display_width(std::string_view text) {
  size_t n = 0;
  for (char c : text) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

std::string abbreviate_end(const std::string& text, size_t max) {
  if (display_width(text) <= max || max < 2) return text;
  size_t kept = 0, i = 0;
  for (; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80 && ++kept == max) break;
  }
  return text.substr(0, i) + "…";
}

std::optional<std::pair<std::int64_t, std::int64_t>> parse_step_range(const std::string& text) {
  size_t dash = text.find('-');
  std::optional<std::int64_t> first = parse_int64(text.substr(0, dash));
  std::optional<std::int64_t> last =
      dash == std::string::npos ? first : parse_int64(text.substr(dash + 1));
  if (!first || !last || *first < 0 || *last < *first) return std::nullopt;
  return std::make_pair(*first, *last);
}

}  // namespace sweepbench
