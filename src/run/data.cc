#include "run/data.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

#include "text/error.h"
#include "text/text.h"

namespace sweepbench {
namespace {

Error data_error(const std::string& path, const std::string& message,
                 const std::string& hint = {}) {
  return Error::input(Mark::in(path), "data.path", message, hint);
}

// Offsets for the train and eval streams come from different generators, so adding evaluation
// steps does not change the training batches.
constexpr std::uint64_t kTrainStream = 0x9e3779b97f4a7c15ULL;
constexpr std::uint64_t kEvalStream = 0xbf58476d1ce4e5b9ULL;

std::mt19937_64 stream(std::uint64_t seed, int rank, std::uint64_t which) {
  std::seed_seq seq{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32),
                    static_cast<std::uint32_t>(rank), static_cast<std::uint32_t>(which),
                    static_cast<std::uint32_t>(which >> 32)};
  return std::mt19937_64(seq);
}

std::string human_count(std::int64_t n) {
  char buf[32];
  if (n >= 1000000000) {
    std::snprintf(buf, sizeof(buf), "%.1fB", n / 1e9);
  } else if (n >= 1000000) {
    std::snprintf(buf, sizeof(buf), "%.1fM", n / 1e6);
  } else if (n >= 1000) {
    std::snprintf(buf, sizeof(buf), "%.1fK", n / 1e3);
  } else {
    std::snprintf(buf, sizeof(buf), "%lld", static_cast<long long>(n));
  }
  return buf;
}

class SyntheticSource : public TokenSource {
 public:
  SyntheticSource(const DataOptions& o, int rank)
      : o_(o),
        train_(stream(o.seed, rank, kTrainStream)),
        eval_(stream(o.seed, rank, kEvalStream)),
        token_(0, o.vocab_size - 1) {}

  Batch next_train(std::int64_t batch) override { return make(batch, train_); }
  Batch next_eval(std::int64_t batch) override { return make(batch, eval_); }
  std::string describe() const override {
    return "synthetic, uniform random ids in [0, " + std::to_string(o_.vocab_size) + ")";
  }

 private:
  Batch make(std::int64_t batch, std::mt19937_64& gen) {
    Batch b;
    b.batch = batch;
    b.seq = o_.seq_len;
    size_t n = static_cast<size_t>(batch * o_.seq_len);
    b.inputs.resize(n);
    b.targets.resize(n);
    // Each row is seq_len + 1 consecutive ids, as a file would give.
    std::vector<std::int64_t> row(static_cast<size_t>(o_.seq_len + 1));
    for (std::int64_t r = 0; r < batch; ++r) {
      for (auto& t : row) t = token_(gen);
      std::copy(row.begin(), row.end() - 1, b.inputs.begin() + r * o_.seq_len);
      std::copy(row.begin() + 1, row.end(), b.targets.begin() + r * o_.seq_len);
    }
    return b;
  }

  DataOptions o_;
  std::mt19937_64 train_;
  std::mt19937_64 eval_;
  std::uniform_int_distribution<std::int64_t> token_;
};

// A read-only memory map of a whole file.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    // O_NONBLOCK: should it have become a FIFO since inspect_token_file, the open cannot block.
    int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      throw data_error(path, std::string("cannot open the data file: ") + std::strerror(errno),
                       "check data.path");
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      int err = errno;
      ::close(fd);
      throw data_error(path,
                       S_ISREG(st.st_mode)
                           ? std::string("cannot stat the data file: ") + std::strerror(err)
                           : std::string("is not a regular file"),
                       "give data.path a regular file");
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_ > 0) {
      void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        int err = errno;
        ::close(fd);
        throw data_error(path, std::string("cannot map the data file: ") + std::strerror(err));
      }
      data_ = static_cast<const unsigned char*>(p);
    }
    ::close(fd);
  }
  ~MappedFile() {
    if (data_ != nullptr) ::munmap(const_cast<unsigned char*>(data_), size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const unsigned char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const unsigned char* data_ = nullptr;
  size_t size_ = 0;
};

class FileSource : public TokenSource {
 public:
  FileSource(const DataOptions& o, int rank, int world)
      : o_(o), info_(inspect_token_file(o.path, o.source, o.token_dtype)), file_(o.path) {
    const std::int64_t need = o.seq_len + 1;  // a sequence and its shifted target
    std::int64_t eval_tokens =
        o.needs_eval
            ? static_cast<std::int64_t>(static_cast<double>(info_.tokens) * o.eval_fraction)
            : 0;
    if (o.needs_eval && eval_tokens < need * o.eval_batch) {
      // Keep at least one evaluation batch even when the fraction rounds it away.
      eval_tokens = need * o.eval_batch;
    }
    std::int64_t train_tokens = info_.tokens - eval_tokens;
    std::int64_t shard = world > 0 ? train_tokens / world : 0;
    std::int64_t min_shard = need * o.train_batch;
    if (shard < min_shard) {
      std::int64_t required = min_shard * world + eval_tokens;
      throw data_error(
          o.path,
          "the file holds " + std::to_string(info_.tokens) +
              " tokens, too few for one batch: each of " + std::to_string(world) +
              " rank(s) needs " + std::to_string(min_shard) +
              " training tokens (micro batch x (seq_len + 1))" +
              (o.needs_eval ? ", plus " + std::to_string(eval_tokens) + " held out for evaluation"
                            : ""),
          "use a file of at least " + std::to_string(required) +
              " tokens, or lower train.micro_batch or data.seq_len");
    }
    check_vocab();
    shard_begin_ = shard * rank;
    shard_tokens_ = shard;
    eval_begin_ = train_tokens;
    eval_tokens_ = eval_tokens;
    train_gen_ = stream(o.seed, rank, kTrainStream);
    eval_gen_ = stream(o.seed, rank, kEvalStream);
  }

  Batch next_train(std::int64_t batch) override {
    return make(batch, shard_begin_, shard_tokens_, train_gen_);
  }
  Batch next_eval(std::int64_t batch) override {
    // Every rank evaluates on the whole held-out part, each with its own offsets.
    return make(batch, eval_begin_, eval_tokens_, eval_gen_);
  }
  std::string describe() const override {
    std::string kind =
        info_.bytes_per_token == 1 ? "bytes" : (info_.bytes_per_token == 2 ? "uint16" : "uint32");
    return to_string(o_.source) + " file " + o_.path + " (" + info_.format + ", " + kind + ", " +
           human_count(info_.tokens) + " tokens; this rank's shard " + human_count(shard_tokens_) +
           ", held out " + human_count(eval_tokens_) + ")";
  }

 private:
  std::int64_t token_at(std::int64_t i) const {
    const unsigned char* p = file_.data() + info_.header_bytes + i * info_.bytes_per_token;
    switch (info_.bytes_per_token) {
      case 1:
        return p[0];
      case 2: {
        std::uint16_t v;
        std::memcpy(&v, p, 2);
        return v;
      }
      default: {
        std::uint32_t v;
        std::memcpy(&v, p, 4);
        return v;
      }
    }
  }

  void check_vocab() const {
    std::int64_t largest = 0;
    for (std::int64_t i = 0; i < info_.tokens; ++i) largest = std::max(largest, token_at(i));
    if (largest >= o_.vocab_size) {
      throw data_error(o_.path,
                       "holds token id " + std::to_string(largest) + ", which model.vocab_size (" +
                           std::to_string(o_.vocab_size) + ") cannot embed",
                       "raise model.vocab_size to at least " + std::to_string(largest + 1));
    }
  }

  Batch make(std::int64_t batch, std::int64_t begin, std::int64_t length, std::mt19937_64& gen) {
    Batch b;
    b.batch = batch;
    b.seq = o_.seq_len;
    b.inputs.resize(static_cast<size_t>(batch * o_.seq_len));
    b.targets.resize(b.inputs.size());
    std::uniform_int_distribution<std::int64_t> offset(0, length - (o_.seq_len + 1));
    for (std::int64_t r = 0; r < batch; ++r) {
      std::int64_t start = begin + offset(gen);
      for (std::int64_t t = 0; t < o_.seq_len; ++t) {
        b.inputs[static_cast<size_t>(r * o_.seq_len + t)] = token_at(start + t);
        b.targets[static_cast<size_t>(r * o_.seq_len + t)] = token_at(start + t + 1);
      }
    }
    return b;
  }

  DataOptions o_;
  TokenFileInfo info_;
  MappedFile file_;
  std::int64_t shard_begin_ = 0;
  std::int64_t shard_tokens_ = 0;
  std::int64_t eval_begin_ = 0;
  std::int64_t eval_tokens_ = 0;
  std::mt19937_64 train_gen_;
  std::mt19937_64 eval_gen_;
};

}  // namespace

TokenFileInfo inspect_token_file(const std::string& path, DataSource source,
                                 TokenDType token_dtype) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw data_error(path, std::string("cannot read the data file: ") + std::strerror(errno),
                     "check data.path");
  }
  // A FIFO or device would block the read or feed it for ever.
  if (!S_ISREG(st.st_mode)) {
    const char* kind = S_ISDIR(st.st_mode)    ? "a directory"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                                              : "a device or socket";
    throw data_error(path,
                     std::string("is ") + kind +
                         ", not a regular file: a data file is read whole (memory-mapped)",
                     "give data.path a regular file");
  }
  std::int64_t size = static_cast<std::int64_t>(st.st_size);
  TokenFileInfo info;
  if (source == DataSource::kText) {
    info.format = "text";
    info.bytes_per_token = 1;
    info.tokens = size;
    return info;
  }
  // llm.c: 256 little-endian int32: magic, version, token count, then the tokens.
  std::int32_t header[3] = {0, 0, 0};
  if (size >= kLlmcHeaderBytes) {
    FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr || std::fread(header, sizeof(header), 1, f) != 1) {
      if (f) std::fclose(f);
      throw data_error(path, "cannot read the data file's first bytes");
    }
    std::fclose(f);
  }
  if (header[0] == kLlmcMagicGpt2 || header[0] == kLlmcMagicLlama3) {
    info.format = "llm.c";
    info.bytes_per_token = header[0] == kLlmcMagicGpt2 ? 2 : 4;
    info.header_bytes = kLlmcHeaderBytes;
    info.tokens = header[2];
    if (header[1] != 1) {
      throw data_error(path, "llm.c header version " + std::to_string(header[1]) +
                                 " is not supported (only version 1)");
    }
    std::int64_t expected = kLlmcHeaderBytes + info.tokens * info.bytes_per_token;
    if (info.tokens < 0 || expected != size) {
      throw data_error(path, "the llm.c header announces " + std::to_string(header[2]) +
                                 " tokens (" + std::to_string(expected) +
                                 " bytes with the header), but the file has " +
                                 std::to_string(size) + " bytes");
    }
    return info;
  }
  info.format = "raw";
  info.bytes_per_token = token_dtype == TokenDType::kUint32 ? 4 : 2;
  if (size % info.bytes_per_token != 0) {
    throw data_error(path,
                     std::to_string(size) + " bytes is not a whole number of " +
                         to_string(token_dtype) + " tokens",
                     "check data.token_dtype");
  }
  info.tokens = size / info.bytes_per_token;
  return info;
}

DataOptions data_options(const DataSettings& data) {
  DataOptions d;
  d.source = data.source;
  d.path = data.path.value_or("");
  d.token_dtype = data.token_dtype;
  d.eval_fraction = data.eval_fraction;
  return d;
}

std::unique_ptr<TokenSource> open_token_source(const DataOptions& options, int rank, int world) {
  if (options.source == DataSource::kSynthetic) {
    return std::make_unique<SyntheticSource>(options, rank);
  }
  return std::make_unique<FileSource>(options, rank, world);
}

}  // namespace sweepbench
