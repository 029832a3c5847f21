#include "text/digest.h"

#include <openssl/evp.h>

#include <stdexcept>

namespace sweepbench {
namespace {

// The algorithm fetched once (OpenSSL 3 looks a name up on every implicit use).
const EVP_MD* algorithm(Digest::Kind kind) {
  static EVP_MD* const sha1 = EVP_MD_fetch(nullptr, "SHA1", nullptr);
  static EVP_MD* const sha256 = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  const EVP_MD* md = kind == Digest::Kind::kSha1 ? sha1 : sha256;
  if (md == nullptr) throw std::runtime_error("OpenSSL's libcrypto has no SHA-1 or SHA-256");
  return md;
}

std::string hex(const unsigned char* bytes, unsigned int n) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out(2 * static_cast<size_t>(n), '0');
  for (unsigned int i = 0; i < n; ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 0xf];
  }
  return out;
}

std::string one_shot(Digest::Kind kind, std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_Digest(data.data(), data.size(), md, &n, algorithm(kind), nullptr) != 1) {
    throw std::runtime_error("OpenSSL's EVP_Digest failed");
  }
  return hex(md, n);
}

}  // namespace

struct Digest::Context {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~Context() { EVP_MD_CTX_free(ctx); }
};

Digest::Digest(Kind kind) : context_(std::make_unique<Context>()) {
  if (context_->ctx == nullptr || EVP_DigestInit_ex(context_->ctx, algorithm(kind), nullptr) != 1) {
    throw std::runtime_error("OpenSSL's EVP_DigestInit_ex failed");
  }
}
Digest::~Digest() = default;
Digest::Digest(Digest&&) noexcept = default;
Digest& Digest::operator=(Digest&&) noexcept = default;

void Digest::update(std::string_view data) {
  if (EVP_DigestUpdate(context_->ctx, data.data(), data.size()) != 1) {
    throw std::runtime_error("OpenSSL's EVP_DigestUpdate failed");
  }
}

std::string Digest::hex_digest() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_DigestFinal_ex(context_->ctx, md, &n) != 1) {
    throw std::runtime_error("OpenSSL's EVP_DigestFinal_ex failed");
  }
  return hex(md, n);
}

std::string sha1_hex(std::string_view data) { return one_shot(Digest::Kind::kSha1, data); }
std::string sha256_hex(std::string_view data) { return one_shot(Digest::Kind::kSha256, data); }

}  // namespace sweepbench
