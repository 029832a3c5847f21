// A resolved config's canonical text and its config_hash, which name a point's results
// (docs/config.md "The config hash"): what is left out of the text (keys of another workload,
// unhashed keys, keys added later while at their default), and the writer that keeps a sweep's
// planning fast by rewriting only the lines that changed between points.
#pragma once

#include <memory>
#include <string>

#include "config/value.h"

namespace sweepbench {

// Canonical text: the resolved config with the unhashed (scheduling-only) keys removed, as
// canonical YAML (sorted keys, stable numbers). config_hash is the SHA-256 of it, in hex.
std::string canonical_config_text(const Value& resolved);
std::string config_hash(const Value& resolved);

// The same text and hash for many resolved configs of one layout (a sweep's points), kept
// between calls: each line is written when its value changes, the rest reused, so a point costs
// its changed lines and the SHA-256 (docs/performance.md, "Planning"). canonical_config_text is
// one of these used once.
class CanonicalConfigText {
 public:
  CanonicalConfigText();
  ~CanonicalConfigText();
  CanonicalConfigText(const CanonicalConfigText&) = delete;
  CanonicalConfigText& operator=(const CanonicalConfigText&) = delete;
  // canonical_config_text(resolved); valid until the next call.
  const std::string& text(const Value& resolved);
  // config_hash(resolved).
  std::string hash(const Value& resolved);

 private:
  struct Layout;
  std::unique_ptr<Layout> layout_;
  std::string text_;
};

// The text of a point's config.yaml: a comment with the hash, then the full resolved config in
// canonical YAML (unhashed keys included).
std::string point_config_file_text(const Value& resolved);

}  // namespace sweepbench
