// SHA-256 (config hashes) and SHA-1 (fairseq2-compatible tags), FIPS 180-4.
//
// Written here rather than linking OpenSSL: two small, fully specified functions checked against
// the NIST vectors in tests/core/digest_test.cc, for one more dependency we would not otherwise
// need.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace sweepbench {

namespace detail {

// The Merkle-Damgard frame SHA-1 and SHA-256 share: 64-byte blocks, padding with 0x80 and the
// big-endian bit length, a state of kWords 32-bit words written out big-endian.
template <typename Derived, size_t kWords>
class Md32Hash {
 public:
  void update(std::string_view data);
  std::array<std::uint8_t, kWords * 4> finish();
  std::string hex_digest();  // finish() as lower-case hex

 protected:
  explicit Md32Hash(const std::array<std::uint32_t, kWords>& initial) : h_(initial) {}
  std::array<std::uint32_t, kWords> h_;

 private:
  void compress() { static_cast<Derived*>(this)->compress(buffer_.data()); }
  std::array<std::uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  std::uint64_t length_ = 0;
};

}  // namespace detail

class Sha1 : public detail::Md32Hash<Sha1, 5> {
 public:
  Sha1();

 private:
  friend class detail::Md32Hash<Sha1, 5>;
  void compress(const std::uint8_t* block);
};

class Sha256 : public detail::Md32Hash<Sha256, 8> {
 public:
  Sha256();

 private:
  friend class detail::Md32Hash<Sha256, 8>;
  void compress(const std::uint8_t* block);
};

// Defined once, in digest.cc.
extern template class detail::Md32Hash<Sha1, 5>;
extern template class detail::Md32Hash<Sha256, 8>;

std::string sha1_hex(std::string_view data);
std::string sha256_hex(std::string_view data);

}  // namespace sweepbench
