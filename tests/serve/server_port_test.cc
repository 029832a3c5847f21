// serve/server.h's ports: free_port draws below the ephemeral range, where no bind to port 0
// lands, and port_free tells a port with a listener from one without; and running_after, which
// waits for a server's end already under way.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <set>
#include <utility>

#include "serve/server.h"
#include "support/temp_dir.h"

namespace sweepbench::serve {
namespace {

// A listener on 127.0.0.1:port (0: any); its fd and port.
std::pair<int, int> listen_on(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      ::listen(fd, 4) != 0) {
    return {-1, 0};
  }
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return {fd, ntohs(a.sin_port)};
}

TEST(FreePort, DrawsBelowTheEphemeralRangeAndTheServerCanBindIt) {
  const auto [low, high] = ephemeral_port_range();
  ASSERT_LE(low, high);
  std::set<int> seen;
  for (int i = 0; i < 20; ++i) {
    const int port = free_port("127.0.0.1");
    if (low >= 11000) {
      EXPECT_GE(port, 10000);
      EXPECT_LT(port, low);
    }
    seen.insert(port);
    auto [fd, bound] = listen_on(port);
    ASSERT_GE(fd, 0) << "port " << port;
    EXPECT_EQ(bound, port);
    ::close(fd);
  }
  EXPECT_GT(seen.size(), 1u) << "drawn at random, not the same port each time";
}

TEST(FreePort, BindsToPortZeroLandInTheEphemeralRangeNotBelowIt) {
  // What free_port relies on: another program's listener on port 0 never gets a port it draws.
  const auto [low, high] = ephemeral_port_range();
  for (int i = 0; i < 20; ++i) {
    auto [fd, port] = listen_on(0);
    ASSERT_GE(fd, 0);
    EXPECT_GE(port, low);
    EXPECT_LE(port, high);
    ::close(fd);
  }
}

TEST(PortFree, TellsAListenedPortFromAFreeOne) {
  auto [fd, port] = listen_on(0);
  ASSERT_GE(fd, 0);
  EXPECT_FALSE(port_free("127.0.0.1", port));
  ::close(fd);
  EXPECT_TRUE(port_free("127.0.0.1", port));
}

TEST(PortAnswers, TellsAListenerFromAClosedPort) {
  auto [fd, port] = listen_on(0);
  ASSERT_GE(fd, 0);
  EXPECT_TRUE(port_answers("127.0.0.1", port));
  ::close(fd);
  EXPECT_FALSE(port_answers("127.0.0.1", port));
  EXPECT_FALSE(port_answers("no-such-host.invalid", port, 100));
}

TEST(Server, RunningAfterWaitsForAnEndUnderWayAndNoLongerThanAsked) {
  sweepbench::testing::TempDir dir;
  ServerLaunch dying;
  dying.argv = {"sh", "-c", "sleep 0.3; exit 3"};
  dying.stdout_log = dir.file("dying.out");
  dying.stderr_log = dir.file("dying.err");
  Server a(dying);
  EXPECT_TRUE(a.running());
  EXPECT_FALSE(a.running_after(10));  // ends within the wait, and the wait ends with it
  EXPECT_EQ(a.exit_text(), "exited with code 3");

  ServerLaunch alive = dying;
  alive.argv = {"sleep", "30"};
  alive.stdout_log = dir.file("alive.out");
  alive.stderr_log = dir.file("alive.err");
  Server b(alive);
  EXPECT_TRUE(b.running_after(0.2));
  EXPECT_TRUE(b.running_after(0));
  b.stop(0);
}

}  // namespace
}  // namespace sweepbench::serve
