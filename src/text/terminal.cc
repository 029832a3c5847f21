#include "text/terminal.h"

#include <cstdio>

#include "text/text.h"

namespace sweepbench {
namespace {

void hex_byte(unsigned char c, std::string* out) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "\\x%02x", c);
  *out += buf;
}

bool shown_escaped(char32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || (cp >= 0x202A && cp <= 0x202E) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

// How many bytes at the end of `s` may be the start of a UTF-8 character still to come.
size_t incomplete_tail(std::string_view s) {
  for (size_t back = 1; back <= 3 && back <= s.size(); ++back) {
    auto b = static_cast<unsigned char>(s[s.size() - back]);
    if ((b & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    size_t need = (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : (b & 0xF8) == 0xF0 ? 4 : 1;
    return need > back ? back : 0;
  }
  return 0;
}

class TerminalSafeBuf : public std::streambuf {
 public:
  explicit TerminalSafeBuf(std::ostream& target) : target_(target) {}
  ~TerminalSafeBuf() override { emit(true); }

 protected:
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    pending_ += traits_type::to_char_type(c);
    if (c == '\n') emit(false);
    return c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    pending_.append(s, static_cast<size_t>(n));
    if (pending_.find('\n') != std::string::npos) emit(false);
    return n;
  }
  int sync() override {
    emit(false);
    target_.flush();
    return target_ ? 0 : -1;
  }

 private:
  void emit(bool all) {
    size_t keep = all ? 0 : incomplete_tail(pending_);
    std::string_view ready(pending_.data(), pending_.size() - keep);
    if (!ready.empty()) target_ << terminal_safe(ready);
    pending_.erase(0, pending_.size() - keep);
    if (all) target_.flush();
  }
  std::ostream& target_;
  std::string pending_;
};

}  // namespace

std::string terminal_safe(std::string_view text, bool keep_newlines) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    char32_t cp = 0;
    size_t n = utf8_char_at(text, i, &cp);
    if (n == 0) {
      hex_byte(static_cast<unsigned char>(text[i]), &out);
      i += 1;
      continue;
    }
    if (n == 1) {
      char c = text[i];
      bool layout = c == '\n' || c == '\t';
      if ((cp < 0x20 && !(layout && keep_newlines)) || cp == 0x7F) {
        hex_byte(static_cast<unsigned char>(c), &out);
      } else {
        out += c;
      }
    } else if (shown_escaped(cp)) {
      char buf[16];
      std::snprintf(buf, sizeof(buf), "\\u{%04x}", static_cast<unsigned>(cp));
      out += buf;
    } else {
      out.append(text.data() + i, n);
    }
    i += n;
  }
  return out;
}

TerminalSafeStream::TerminalSafeStream(std::ostream& target)
    : std::ostream(nullptr), buf_(std::make_unique<TerminalSafeBuf>(target)) {
  rdbuf(buf_.get());
}

TerminalSafeStream::~TerminalSafeStream() {
  flush();
  rdbuf(nullptr);
}

}  // namespace sweepbench
