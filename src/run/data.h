// Where tokens come from: random ids, a binary token file, or a text file read as bytes.
//
// Every sequence is exactly seq_len tokens (the fixed context length a fair benchmark needs), with
// targets shifted by one. A file is split once: the last data.eval_fraction of it is held out for
// evaluation, the rest is cut into one contiguous shard per rank. Within its shard each rank
// picks sequence offsets with a generator seeded from train.seed and its rank, so batches are
// deterministic and disjoint across ranks. Files are memory-mapped, not read into memory.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "config/settings.h"

namespace sweepbench {

struct Batch {
  std::int64_t batch = 0;             // sequences
  std::int64_t seq = 0;               // tokens per sequence
  std::vector<std::int64_t> inputs;   // (batch, seq), row-major
  std::vector<std::int64_t> targets;  // (batch, seq): inputs shifted by one
};

struct DataOptions {
  DataSource source = DataSource::kSynthetic;
  std::string path;
  TokenDType token_dtype = TokenDType::kUint16;  // headerless token files
  double eval_fraction = 0.1;
  std::int64_t seq_len = 0;
  std::int64_t vocab_size = 0;
  std::uint64_t seed = 0;
  // How many sequences the run will draw at most per batch (train and eval micro batches), to
  // check up front that the file is long enough for one batch.
  std::int64_t train_batch = 1;
  std::int64_t eval_batch = 1;
  bool needs_eval = true;
};

// What a token file holds, read from its header (llm.c .bin files) or from data.token_dtype.
struct TokenFileInfo {
  std::string format;       // "llm.c" or "raw"
  int bytes_per_token = 2;  // 1 (text), 2 or 4
  std::int64_t header_bytes = 0;
  std::int64_t tokens = 0;
};

class TokenSource {
 public:
  virtual ~TokenSource() = default;
  // The next batch of `batch` sequences for training or evaluation.
  virtual Batch next_train(std::int64_t batch) = 0;
  virtual Batch next_eval(std::int64_t batch) = 0;
  // A one-line description for the console: "synthetic, vocab 512" or "tokens file x.bin (llm.c,
  // uint16, 1.2M tokens; this rank's shard 540K)".
  virtual std::string describe() const = 0;
};

// The file-related options from the config's data section (source, path, token type, the
// evaluation share); the caller sets the shapes, seed and batch sizes.
DataOptions data_options(const DataSettings& data);

// Opens the source for `rank` of `world`. Throws sweepbench::Error (input) when a file is missing,
// malformed, holds a token id >= vocab_size, or is too short for one batch on every rank.
std::unique_ptr<TokenSource> open_token_source(const DataOptions& options, int rank, int world);

// Reads a token file's header (or infers its layout). Throws sweepbench::Error.
TokenFileInfo inspect_token_file(const std::string& path, DataSource source,
                                 TokenDType token_dtype);

// llm.c's header magic numbers: GPT-2 token files (uint16) and Llama 3 token files (uint32).
constexpr std::int32_t kLlmcMagicGpt2 = 20240520;
constexpr std::int32_t kLlmcMagicLlama3 = 20240801;
constexpr std::int64_t kLlmcHeaderBytes = 256 * 4;

}  // namespace sweepbench
