#!/usr/bin/python3
"""A stand-in OpenAI-compatible streaming server, for the load client's tests.

It stands in for the real servers (vLLM and others) that later tests use: it exists for the
error paths a real server will not take on demand, and to measure the client's own speed against
a server that costs next to nothing. It generates no text of its own beyond "tok0 tok1 ...".

Binds 127.0.0.1 on a free port (port 0) and prints the port as its first stdout line. Serves
POST /v1/completions and /v1/chat/completions with Server-Sent Events: --chunks chunks of one
token each (--tokens-per-chunk in the usage), --first-delay seconds before the first and --delay seconds between the others (a
request's own "standin_delay" field overrides --delay), then a usage chunk and data: [DONE].
GET /stats gives {"requests": n, "max_concurrent": n, "in_flight": n}; GET /health answers 200
(503 with --never-ready); GET /v1/models lists --model.

As a serve point's server (bench-serve starts it, docs/serving.md) it also stands in for a real
server's life: --port (0: a free one), --start-delay (seconds before it listens, as a model
loads), --exit-after N (exits with code 3 and an error on stderr once N requests have started:
a crash in the middle of the load), --ignore-term (SIGTERM does nothing: the grace period then
ends in SIGKILL), --serial (one answer at a time, so that latency grows with the load, as a real server's does
past its capacity), and --workers N (that many child processes, half of them in a session of
their own, as an engine's workers: what must not outlive the point). It writes "stand-in: ready
on port N" to stderr when it listens.

The prompt (a chat's last message) chooses a fault when it starts with one of:
  fault:http-500      HTTP 500 with a JSON error body
  fault:malformed     a data: line whose payload is no JSON
  fault:server-error  an error object in the stream (after one chunk)
  fault:close         the connection closed mid-stream (after one chunk, no end of the body)
  fault:hang          the answer's headers, then nothing for --hang seconds
  echo:               the first chunk's text is the whole prompt
--fault MODE applies one of them to every request. --record FILE writes what it was given (argv,
environment, each request's body) to FILE, for tests of what reaches a server. Python's standard
library only.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

OPTIONS = None
LOCK = threading.Lock()
SERIAL = threading.Condition()
SERIAL_STATE = {"next": 0, "serving": 0}
STATS = {"requests": 0, "in_flight": 0, "max_concurrent": 0}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive and chunked bodies, as real servers
    disable_nagle_algorithm = True  # each chunk leaves when written

    def log_message(self, *args):
        pass

    def send_json(self, status, obj):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/stats":
            with LOCK:
                self.send_json(200, dict(STATS))
        elif self.path == "/health":
            if OPTIONS.never_ready:
                self.send_json(503, {"error": {"message": "never ready, on purpose"}})
            else:
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()
        elif self.path == "/v1/models":
            self.send_json(200, {"object": "list",
                                 "data": [{"id": OPTIONS.model, "object": "model"}]})
        else:
            self.send_json(404, {"error": {"message": "no such path", "type": "not_found"}})

    def write_chunk(self, data):
        # One HTTP chunk per SSE event, in one write.
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def event(self, obj):
        self.write_chunk(b"data: " + json.dumps(obj).encode() + b"\n\n")

    def do_POST(self):
        chat = self.path == "/v1/chat/completions"
        if self.path not in ("/v1/completions", "/v1/chat/completions"):
            length = int(self.headers.get("Content-Length", 0))
            self.rfile.read(length)
            self.send_json(404, {"error": {"message": "no such path", "type": "not_found"}})
            return
        length = int(self.headers.get("Content-Length", 0))
        request = json.loads(self.rfile.read(length))
        if OPTIONS.record:
            with LOCK, open(OPTIONS.record, "a") as f:
                f.write(json.dumps({"path": self.path, "body": request}) + "\n")
        prompt = request["messages"][-1]["content"] if chat else request["prompt"]
        if isinstance(prompt, list):  # token ids: one word each
            prompt = " ".join(str(t) for t in prompt)
        fault = OPTIONS.fault or ""
        for mode in ("http-500", "malformed", "server-error", "close", "hang"):
            if prompt.startswith("fault:" + mode):
                fault = mode
        delay = float(request.get("standin_delay", OPTIONS.delay))
        chunks = min(int(request.get("max_tokens", OPTIONS.chunks)), OPTIONS.chunks)
        with LOCK:
            STATS["requests"] += 1
            STATS["in_flight"] += 1
            STATS["max_concurrent"] = max(STATS["max_concurrent"], STATS["in_flight"])
            if OPTIONS.exit_after and STATS["requests"] > OPTIONS.exit_after:
                sys.stderr.write("RuntimeError: the stand-in crashed on purpose after %d "
                                 "requests\n" % OPTIONS.exit_after)
                sys.stderr.flush()
                os._exit(3)
        try:
            if OPTIONS.serial:
                with SERIAL:  # one answer at a time, first come first served
                    ticket = SERIAL_STATE["next"]
                    SERIAL_STATE["next"] += 1
                    SERIAL.wait_for(lambda: SERIAL_STATE["serving"] == ticket)
                try:
                    self.answer(chat, prompt, fault, delay, chunks, request)
                finally:
                    with SERIAL:
                        SERIAL_STATE["serving"] += 1
                        SERIAL.notify_all()
            else:
                self.answer(chat, prompt, fault, delay, chunks, request)
        finally:
            with LOCK:
                STATS["in_flight"] -= 1

    def answer(self, chat, prompt, fault, delay, chunks, request):
        if fault == "http-500":
            self.send_json(500, {"error": {"message": "the stand-in failed on purpose",
                                           "type": "InternalServerError", "code": 500}})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if fault == "hang":
            time.sleep(OPTIONS.hang)
            self.close_connection = True
            return
        kind = "chat.completion.chunk" if chat else "text_completion"
        if chat:  # a chat answer's first delta carries the role and no token
            self.event({"object": kind, "choices": [{"index": 0, "delta": {"role": "assistant"},
                                                     "finish_reason": None}]})
        time.sleep(OPTIONS.first_delay)
        for i in range(chunks):
            if i > 0:
                time.sleep(delay)
            text = prompt if (i == 0 and prompt.startswith("echo:")) else "tok%d " % i
            choice = {"index": 0, "finish_reason": "length" if i == chunks - 1 else None}
            if chat:
                choice["delta"] = {"content": text}
            else:
                choice["text"] = text
            self.event({"object": kind, "model": request.get("model", ""), "choices": [choice]})
            if i == 0 and fault == "malformed":
                self.write_chunk(b"data: {this is not json\n\n")
                return self.end_body()
            if i == 0 and fault == "server-error":
                self.event({"error": {"message": "the stand-in's error mid-stream",
                                      "type": "BadRequestError", "code": 400}})
                return self.end_body()
            if i == 0 and fault == "close":
                self.close_connection = True
                return  # no terminating chunk: the body is cut
        self.event({"object": kind, "choices": [],
                    "usage": {"prompt_tokens": len(prompt.split()),
                              "completion_tokens": chunks * OPTIONS.tokens_per_chunk,
                              "total_tokens": len(prompt.split()) + chunks * OPTIONS.tokens_per_chunk}})
        self.write_chunk(b"data: [DONE]\n\n")
        self.end_body()

    def end_body(self):
        self.wfile.write(b"0\r\n\r\n")


def main():
    global OPTIONS
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=8, help="token chunks per answer")
    parser.add_argument("--tokens-per-chunk", type=int, default=1,
                        help="the tokens each chunk stands for in the usage chunk")
    parser.add_argument("--delay", type=float, default=0.0, help="seconds between chunks")
    parser.add_argument("--first-delay", type=float, default=0.0,
                        help="seconds before the first token chunk")
    parser.add_argument("--hang", type=float, default=30.0, help="fault:hang's silence")
    parser.add_argument("--fault", default="", help="a fault for every request")
    parser.add_argument("--port", type=int, default=0, help="0: a free port")
    parser.add_argument("--host", default="127.0.0.1", help="the address it listens on")
    parser.add_argument("--model", default="standin", help="the name GET /v1/models gives")
    parser.add_argument("--start-delay", type=float, default=0.0,
                        help="seconds before it listens")
    parser.add_argument("--never-ready", action="store_true", help="GET /health answers 503")
    parser.add_argument("--exit-after", type=int, default=0,
                        help="exit (code 3) when request N+1 comes")
    parser.add_argument("--ignore-term", action="store_true", help="ignore SIGTERM")
    parser.add_argument("--serial", action="store_true",
                        help="answer one request at a time, in the order they came: TTFT grows with load")
    parser.add_argument("--workers", type=int, default=0,
                        help="child processes that sleep, half of them setsid'd")
    parser.add_argument("--record", default="",
                        help="a file to write what it was given: its argv, environment and "
                             "working directory first, then each request's path and body, a JSON "
                             "object a line")
    parser.add_argument("--label", default="", help="any text, kept in --record's first line")
    OPTIONS = parser.parse_args()
    if OPTIONS.record:
        with open(OPTIONS.record, "w") as f:
            f.write(json.dumps({"argv": sys.argv, "env": dict(os.environ),
                                "cwd": os.getcwd()}) + "\n")
    if OPTIONS.ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for i in range(OPTIONS.workers):
        # Named by the model too, so that a test finds its own among others'.
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)",
                          "standin-worker", OPTIONS.model], start_new_session=(i % 2 == 1))
    time.sleep(OPTIONS.start_delay)
    server = ThreadingHTTPServer((OPTIONS.host, OPTIONS.port), Handler)
    server.daemon_threads = True
    server.request_queue_size = 1024
    print(server.server_address[1], flush=True)
    sys.stderr.write("stand-in: ready on port %d (node %s)\n"
                     % (server.server_address[1], os.environ.get("SLURMD_NODENAME", "-")))
    sys.stderr.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
