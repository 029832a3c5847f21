// bench-serve: runs one serve point (docs/serving.md): an inference server started for the point
// and loaded at each level of its load plan by the native client (load_client.h).
//
// `bench-serve --config DIR/config.yaml --out DIR` starts serve.argv (placeholders replaced,
// {port} a free port unless serve.port sets one) with its output in DIR/logs/server.{stdout,
// stderr}.txt, waits until it is ready (serve.ready.path answers 200, or a line of its output
// matches serve.ready.log) within serve.ready.timeout_s, sends the warm-up requests, then each
// level's requests in turn (and the SLA search's levels), stops the server (server.h), and writes
// DIR/rank-00000.h5 (the groups /command, the server, and /serve, the load) and DIR/summary.json.
//
// Its exit codes are bench-command's (docs/exit-codes.md): a server that exits or is never ready
// fails the point with its own last words as the reason. Stop signals end the load at once and
// stop the server; the levels measured before are kept: SIGUSR1 and SIGTERM record timeout,
// SIGINT, SIGUSR2 and SIGHUP cancelled. A second stop kills the server's group at once.
#pragma once

namespace sweepbench {

int bench_serve_main(int argc, char** argv);

}  // namespace sweepbench
