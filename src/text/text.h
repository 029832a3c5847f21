// Small text helpers shared by the config model, the tagger and the printers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sweepbench {

// A double as Python's repr() writes it: the shortest text that reads back to the same double,
// fixed notation when the decimal exponent is in [-4, 16), else scientific with a signed
// two-digit-minimum exponent: 2.0, 0.0001, 1e-05, 1e+16, inf, -inf, nan. This is the "stable
// number formatting" of the canonical config form and what fairseq2-style tags show.
std::string format_float_repr(double value);

// A JSON string literal (also a valid YAML double-quoted scalar): escapes quotes, backslashes and
// control characters; bytes that are not valid UTF-8 become \u00XX.
std::string quote_json(std::string_view s);
// The same, appended to `out`.
void append_quoted_json(std::string& out, std::string_view s);

// The length of the valid UTF-8 character at s[i] (1 to 4), its code point in `code_point` when
// given; 0 when it is not one (a stray continuation byte, an overlong form, a surrogate, past
// U+10FFFF, or cut short).
size_t utf8_char_at(std::string_view s, size_t i, char32_t* code_point = nullptr);

// The offset of the first byte that is not part of valid UTF-8, or npos when all of it is valid.
size_t find_invalid_utf8(std::string_view s);

// `s` as valid UTF-8 text: each byte that is not part of valid UTF-8, and each NUL, replaced by
// U+FFFD; `replaced` (when given) counts the replacements. For text that came from programs'
// output on its way into our files and tables (docs/security.md).
std::string valid_utf8(std::string_view s, size_t* replaced = nullptr);

// Levenshtein edit distance (insertions, deletions, substitutions of bytes).
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `word`, if it is close enough to be a plausible typo; else the one
// `word` shortens (shortened_match).
std::optional<std::string> closest_match(std::string_view word,
                                         const std::vector<std::string>& candidates);
// The candidate whose '_'- or '.'-separated parts, a run of them in order, each start with the
// word's parts (tokens_per_sec -> train_tokens_per_second), the one with the fewest other parts;
// nullopt for a word of one part.
std::optional<std::string> shortened_match(std::string_view word,
                                           const std::vector<std::string>& candidates);

// A size in the unit its number asks for, three figures: "512 B", "246 MiB", "1.24 GiB",
// "126 GiB"; binary units (KiB, MiB, GiB, TiB, PiB: 1024 apart) or decimal ones (kB, MB, GB, TB,
// PB: 1000 apart), never both in one text.
std::string byte_size(double bytes, bool binary = true);

std::string join(const std::vector<std::string>& parts, std::string_view sep);

// Option values that may each hold a comma-separated list ("a,b" "c" -> a b c), trimmed, empty
// parts dropped.
std::vector<std::string> split_commas(const std::vector<std::string>& values);

// 1234567 -> "1,234,567" (rounded to an integer).
std::string with_commas(double v);

// The current time in UTC as ISO 8601, to the second: "2026-11-22T06:30:00Z".
std::string utc_now_iso8601();
bool starts_with(std::string_view s, std::string_view prefix);
bool ends_with(std::string_view s, std::string_view suffix);
std::string trim(std::string_view s);
// Letters, digits and '_', not starting with a digit, not empty: an environment variable's name,
// a metric's column.
bool is_identifier(std::string_view name);
// The first line of `text`, cut to `max` characters ("..." added when cut).
std::string first_line(const std::string& text, size_t max);
// What a program's stderr said last: its last line with a letter or digit in it; but where the
// text ends with a message between rules of dashes (mpirun's and Open MPI's), that message's first
// paragraph ("There are not enough slots available in the system to satisfy the 3 slots that were
// requested by the application:"), whose last line is advice; or for MPI_ABORT's notice, the
// line said before it. Open MPI's "sent help message" asides are passed over.
std::string last_said(const std::string& text);
// Whether a line is a GNU program's pointer after a usage error ("Try `gzip --help' for more
// information."): it says where help is, not what went wrong, so last_said and a command's
// reason take the line before it.
bool is_help_pointer(std::string_view line);
std::string to_lower(std::string_view s);  // ASCII letters only
std::string to_upper(std::string_view s);  // ASCII letters only
// `text` cut to at most `max` characters (UTF-8 aware), its middle replaced by '…' (for people:
// a long value stays recognisable by its two ends).
std::string abbreviate_middle(const std::string& text, size_t max);
// `text` cut at its end to at most `max` characters (UTF-8 aware), '…' marking the cut.
std::string abbreviate_end(const std::string& text, size_t max);
// The characters of UTF-8 `text` (a terminal column each, for the scripts our tables print).
size_t display_width(std::string_view text);

// Parses a whole string as a base-10 int64; nullopt on junk or overflow.
std::optional<std::int64_t> parse_int64(std::string_view s, int base = 10);
// "N" or "FIRST-LAST" (0 <= FIRST <= LAST) as a range of steps; nullopt when it is neither.
std::optional<std::pair<std::int64_t, std::int64_t>> parse_step_range(const std::string& text);
// Parses a whole string as a double (C locale); nullopt on junk.
std::optional<double> parse_double(std::string_view s);

// "1 point", "2 points".
// Whether `text` could be a key a user meant (letters, digits, '_', '-', '.'; at most 100
// characters). Error messages quote only such keys: anything else may be a line of a file that
// is not a config at all (/etc/shadow given as a defaults file) and is not echoed.
bool is_key_like(std::string_view text);

std::string plural(size_t n, std::string_view singular, std::string_view plural_form = {});

}  // namespace sweepbench
