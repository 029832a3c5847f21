// SHA-256 (config hashes) and SHA-1 (fairseq2-compatible tags), FIPS 180-4.
//
// Written here rather than linking OpenSSL: two small, fully specified functions checked against
// the NIST vectors in tests/core/digest_test.cc, for one more dependency we would not otherwise need.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace sweepbench {

class Sha1 {
 public:
  Sha1();
  void update(std::string_view data);
  std::array<std::uint8_t, 20> finish();
  std::string hex_digest();  // finish() as lower-case hex

 private:
  void compress(const std::uint8_t* block);
  std::array<std::uint32_t, 5> h_;
  std::array<std::uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  std::uint64_t length_ = 0;
};

class Sha256 {
 public:
  Sha256();
  void update(std::string_view data);
  std::array<std::uint8_t, 32> finish();
  std::string hex_digest();

 private:
  void compress(const std::uint8_t* block);
  std::array<std::uint32_t, 8> h_;
  std::array<std::uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  std::uint64_t length_ = 0;
};

std::string sha1_hex(std::string_view data);
std::string sha256_hex(std::string_view data);

}  // namespace sweepbench
