// Reads that cannot hang or grow without bound: only regular files are
// read, opened so that a FIFO cannot block the open, and never past their limit.
#include "os/fs.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/temp_dir.h"
#include "text/error.h"

namespace sweepbench {
namespace {

using sweepbench::testing::TempDir;

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.mark().str() + ": " + e.message();
  }
  return "<no error>";
}

TEST(ReadFile, RegularFilesAreReadOthersRefusedAtOnce) {
  TempDir dir;
  EXPECT_EQ(read_file_if_exists(dir.write("a.json", "{}")), "{}");
  EXPECT_FALSE(read_file_if_exists(dir.file("missing")).has_value());
  // A FIFO with no writer would block an ordinary open for ever.
  ASSERT_EQ(::mkfifo(dir.file("status.json").c_str(), 0600), 0);
  EXPECT_EQ(error_of([&] { read_file_if_exists(dir.file("status.json")); }),
            dir.file("status.json") +
                ": is a FIFO, not a regular file: sweepbench reads only regular files");
  // /dev/zero would be read until memory ran out, and a link to it is the same file.
  ASSERT_EQ(::symlink("/dev/zero", dir.file("config.yaml").c_str()), 0);
  EXPECT_EQ(error_of([&] { read_file_if_exists(dir.file("config.yaml")); }),
            dir.file("config.yaml") +
                ": is a character device, not a regular file: sweepbench reads only regular "
                "files");
  EXPECT_EQ(error_of([&] { read_file_if_exists(dir.path()); }),
            dir.path() +
                ": is a directory, not a regular file: sweepbench reads only regular "
                "files");
}

TEST(ReadFile, NothingPastItsLimit) {
  TempDir dir;
  std::string path = dir.write("summary.json", std::string(1000, 'x'));
  EXPECT_EQ(read_file_if_exists(path, 1000)->size(), 1000u);
  EXPECT_EQ(error_of([&] { read_file_if_exists(path, 999); }),
            path +
                ": is larger than 999 bytes, more than such a file can be: is it the file it "
                "should be?");
  EXPECT_EQ(error_of([&] { read_file_if_exists(path, size_t{1} << 20); }), "<no error>");
  EXPECT_EQ(kMaxSmallFile, size_t{64} << 20);
}

TEST(ReadFile, TailIsTheLastBytes) {
  TempDir dir;
  std::string path = dir.write("stderr.txt", "first\n" + std::string(100, '.') + "\nlast\n");
  EXPECT_EQ(read_file_tail(path, 5), "last\n");
  EXPECT_EQ(read_file_tail(path, 1000)->substr(0, 6), "first\n");
  EXPECT_FALSE(read_file_tail(dir.file("none"), 5).has_value());
}

}  // namespace
}  // namespace sweepbench
