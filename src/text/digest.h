// SHA-256 (config hashes) and SHA-1 (fairseq2-compatible tags), by OpenSSL's libcrypto.
//
// A library every distribution keeps patched, and faster than the 255 lines of our own it
// replaced (SHA-NI where the CPU has it; bench-sweep plan hashes each point's canonical config).
// tests/text/digest_test.cc checks both against the NIST vectors. Only digest.cc includes
// OpenSSL's headers.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace sweepbench {

// A digest fed a piece at a time: update() any number of times, then hex_digest() once.
class Digest {
 public:
  enum class Kind { kSha1, kSha256 };
  explicit Digest(Kind kind);
  ~Digest();
  Digest(Digest&&) noexcept;
  Digest& operator=(Digest&&) noexcept;

  void update(std::string_view data);
  std::string hex_digest();  // lower-case hex; the digest is spent

 private:
  struct Context;
  std::unique_ptr<Context> context_;
};

class Sha1 : public Digest {
 public:
  Sha1() : Digest(Kind::kSha1) {}
};

class Sha256 : public Digest {
 public:
  Sha256() : Digest(Kind::kSha256) {}
};

std::string sha1_hex(std::string_view data);
std::string sha256_hex(std::string_view data);

}  // namespace sweepbench
