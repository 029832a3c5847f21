// SHA-1 and SHA-256 against the FIPS 180 example vectors.
#include "text/digest.h"

#include <gtest/gtest.h>

#include <string>

namespace sweepbench {
namespace {

struct Vector {
  std::string input;
  const char* sha1;
  const char* sha256;
};

TEST(Digest, MatchesTheNistVectors) {
  const Vector vectors[] = {
      {"", "da39a3ee5e6b4b0d3255bfef95601890afd80709",
       "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
      {"abc", "a9993e364706816aba3e25717850c26c9cd0d89d",
       "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
      {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
       "84983e441c3bd26ebaae4aa1f95129e5e54670f1",
       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
      {std::string(1000000, 'a'), "34aa973cd4c4daa4f61eeb2bdbad27316534016f",
       "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
  };
  for (const Vector& v : vectors) {
    EXPECT_EQ(sha1_hex(v.input), v.sha1) << v.input.substr(0, 20);
    EXPECT_EQ(sha256_hex(v.input), v.sha256) << v.input.substr(0, 20);
  }
}

TEST(Digest, IncrementalUpdatesEqualOneShot) {
  // Pieces that straddle the 64-byte block and the 56-byte padding boundary.
  std::string text(200, 'x');
  for (size_t i = 0; i < text.size(); ++i) text[i] = static_cast<char>('a' + i % 26);
  for (size_t cut : {0, 1, 55, 56, 63, 64, 65, 119, 128, 200}) {
    Sha256 a;
    a.update(text.substr(0, cut));
    a.update(text.substr(cut));
    EXPECT_EQ(a.hex_digest(), sha256_hex(text)) << cut;
    Sha1 b;
    b.update(text.substr(0, cut));
    b.update(text.substr(cut));
    EXPECT_EQ(b.hex_digest(), sha1_hex(text)) << cut;
  }
}

}  // namespace
}  // namespace sweepbench
