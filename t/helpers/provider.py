#!/usr/bin/env python3
"""provider.py -- a test double of the model providers' HTTPS APIs, for the
provider gateway's tests.

Binds 127.0.0.1 (port 0 unless --port), writes the port it got to
--port-file, serves HTTPS (TLS 1.2 or later, HTTP/1.1, keep-alive) with
--cert and --key until SIGTERM or --lifetime seconds.  Threaded
(http.server.ThreadingHTTPServer).  Standard library only.  Nothing on
stdout; stderr gets one line when it listens, and errors.

Endpoints (the query string is ignored: Claude Code sends ?beta=true):

  POST /v1/messages              Anthropic Messages, stream or not
  POST /v1/messages/count_tokens {"input_tokens": N}
  GET  /v1/models[/ID]           a list of two models (one); Anthropic's
                                 shape when the request has an
                                 anthropic-version header, else OpenAI's
  POST /v1/chat/completions      OpenAI Chat Completions, stream or not
                                 (stream_options.include_usage: a last
                                 chunk with "choices": [] and the usage)
  POST /v1/responses             OpenAI Responses, stream or not
  GET  /v1/responses             with Upgrade: websocket: 101, then every
                                 text or binary frame echoed (ping: pong;
                                 close: close)
  anything else                  404 (405: a known path, another method)

Every endpoint wants a key: x-api-key or "Authorization: Bearer ..." (any
value; none: 401 in the provider's shape).  Errors have the provider's
shape: Anthropic's {"type": "error", "error": {"type", "message"}} on
/v1/messages*, OpenAI's {"error": {"message", "type", "param", "code"}} on
/v1/chat/completions and /v1/responses.  Anthropic answers carry
request-id: req_..., OpenAI ones x-request-id: req_....

The answer is always the text "Hello from the provider double." sent as
six text deltas, PIECES below (test-long: N deltas of "tok ").  The
numbers, all derived from the request so that a test can predict them:

  C(x)    len(json.dumps(x, sort_keys=True, separators=(",", ":"),
          ensure_ascii=False)), in characters
  input   3 + C(messages) // 4      (Messages, count_tokens, Chat)
          3 + C(input) // 4         (Responses)
  output  2 * deltas + 1            (13 for the normal answer)
  Anthropic: cache_creation_input_tokens 17, cache_read_input_tokens 19;
          the stream's message_start says output_tokens 1, then TWO
          message_delta events: the first output_tokens deltas + 1 (7),
          stop_reason null; the second the final output (13), stop_reason
          end_turn, with the input and cache counts again
  OpenAI: cached_tokens input // 2, reasoning_tokens min(5, output),
          total input + output

Behaviours, by the request's model name (so that a real SDK triggers them):

  test-error-429   429 with retry-after: 1 (Anthropic rate_limit_error;
                   OpenAI type "requests", code "rate_limit_exceeded")
  test-error-500   500 (Anthropic api_error; OpenAI server_error)
  test-reset       a stream: three events, then a TCP reset (SO_LINGER 0,
                   no TLS close_notify); not streamed: half the body, then
                   the reset
  test-malformed   a stream whose events' data is not JSON (the last
                   character cut off); not streamed: such a body
  test-slow        a stream with SLOW_DELAY_MS (200) between events (or
                   --event-delay-ms, if more)
  test-long        a stream of N text deltas, N from the x-test-events
                   header (default 1000, at most LONG_EVENTS_MAX)

--event-delay-ms N waits N ms between the events of every stream.

x-test-read-pause-ms: N (any request, at most READ_PAUSE_MS_MAX) waits N ms
after the request's head before reading its body: a provider slow to take
a large body, for the bounds on what the gateway holds meanwhile.

--log FILE gets one JSON object per request, one a line, once it is over:
  time (epoch seconds, when the request head came), method, path (as
  sent, query included), headers ([[name, value], ...] as received, the
  key headers too), key_header ("x-api-key", "authorization" or null),
  key (its value: the bearer token without "Bearer "), body_len, api
  (messages, count_tokens, models, chat, responses, ws, none), model,
  stream (true/false), behaviour (the test-* model, or null), status,
  usage (the answer's final usage object, in the provider's shape: a
  stream's last one; logged also when the stream was cut before it; null
  for a Chat stream without include_usage), input_tokens, output_tokens
  (the same, flat: Chat's prompt_tokens and completion_tokens), events (per streamed event or WebSocket frame:
  {"t": epoch seconds when it was written, "type": ...}, the first
  EVENT_TIMES_MAX), events_total, end ("ok", "reset", "client gone").
"""

import argparse
import base64
import hashlib
import json
import os
import signal
import socket
import ssl
import struct
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import serverlib

# Limits: every buffer, count and wait is bounded.
BODY_MAX = 64 * 1024 * 1024           # a request body
READ_PAUSE_MS_MAX = 10000             # x-test-read-pause-ms
CHUNK_LINE_MAX = 1024                 # a chunk-size line of a chunked body
CONNECTIONS_MAX = 512
IDLE_TIMEOUT = 30.0                   # seconds without a byte from the client
LONG_EVENTS_DEFAULT = 1000
LONG_EVENTS_MAX = 1000000
EVENT_DELAY_MS_MAX = 10000
SLOW_DELAY_MS = 200
RESET_AFTER_EVENTS = 3
EVENT_TIMES_MAX = 10000               # event times kept in a log record
WS_FRAME_MAX = 16 * 1024 * 1024
WS_FRAMES_MAX = 100000
WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

PIECES = ["Hello", " from", " the", " provider", " double", "."]
LONG_PIECE = "tok "
CACHE_CREATION_TOKENS = 17            # Anthropic, fixed
CACHE_READ_TOKENS = 19                # Anthropic, fixed
REASONING_TOKENS = 5                  # OpenAI, at most the output
MODELS = ["claude-test-1", "gpt-test-1"]
CREATED = 1700000000                  # the models' and answers' time stamp

ANTHROPIC_APIS = ("messages", "count_tokens")
OPENAI_APIS = ("chat", "responses", "ws")


class Reset(Exception):
    """The double reset the connection on purpose."""


class Gone(Exception):
    """The client went away."""


class BadBody(Exception):
    def __init__(self, status, text):
        Exception.__init__(self, text)
        self.status = status


def canon_len(x):
    return len(json.dumps(x, sort_keys=True, separators=(",", ":"),
                          ensure_ascii=False))


def dumps(x):
    return json.dumps(x, separators=(",", ":")).encode("utf-8")


def errlog(msg):
    try:
        sys.stderr.write("provider: %s\n" % msg)
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


class Answer:
    """What one request is answered: the text deltas and the token counts."""

    def __init__(self, api, body, headers):
        self.pieces = PIECES
        if body.get("model") == "test-long":
            n = LONG_EVENTS_DEFAULT
            try:
                n = int(headers.get("x-test-events", n))
            except ValueError:
                pass
            n = max(1, min(n, LONG_EVENTS_MAX))
            self.pieces = [LONG_PIECE] * n
        self.text = "".join(self.pieces)
        self.input = 3 + canon_len(body.get("input" if api == "responses"
                                            else "messages")) // 4
        self.output = 2 * len(self.pieces) + 1
        self.cached = self.input // 2
        self.reasoning = min(REASONING_TOKENS, self.output)


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, args, ctx):
        self.args = args
        self.ctx = ctx
        self.slots = threading.BoundedSemaphore(CONNECTIONS_MAX)
        self.log_lock = threading.Lock()
        self.log_file = open(args.log, "a", encoding="utf-8") if args.log else None
        self.counter = 0
        self.counter_lock = threading.Lock()
        ThreadingHTTPServer.__init__(self, (args.bind, args.port), Handler)

    def next_id(self):
        with self.counter_lock:
            self.counter += 1
            return "%08x%08x" % (os.getpid(), self.counter)

    def get_request(self):
        sock, peer = self.socket.accept()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # The handshake happens in the connection's thread (setup()).
        return self.ctx.wrap_socket(sock, server_side=True,
                                    do_handshake_on_connect=False), peer

    def process_request(self, request, client_address):
        if not self.slots.acquire(timeout=5.0):
            errlog("too many connections, closing one")
            self.shutdown_request(request)
            return
        ThreadingHTTPServer.process_request(self, request, client_address)

    def process_request_thread(self, request, client_address):
        try:
            ThreadingHTTPServer.process_request_thread(self, request,
                                                       client_address)
        finally:
            self.slots.release()

    def handle_error(self, request, client_address):
        e = sys.exc_info()[1]
        if isinstance(e, (ConnectionError, ssl.SSLError, socket.timeout,
                          Gone, Reset, OSError)):
            return
        ThreadingHTTPServer.handle_error(self, request, client_address)

    def write_record(self, rec):
        if self.log_file is None:
            return
        line = json.dumps(rec, separators=(",", ":"), ensure_ascii=False)
        with self.log_lock:
            if not self.log_file.closed:
                self.log_file.write(line + "\n")
                self.log_file.flush()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "provider-double/1"
    sys_version = ""
    timeout = IDLE_TIMEOUT

    def setup(self):
        BaseHTTPRequestHandler.setup(self)
        self.connection.do_handshake()

    def log_message(self, fmt, *args):
        pass

    def version_string(self):
        return self.server_version

    # --- plumbing ---------------------------------------------------------

    def do_GET(self):
        self.dispatch()

    do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = do_GET

    def dispatch(self):
        t0 = time.time()
        self.rec = {
            "time": t0, "method": self.command, "path": self.path,
            "headers": [[k, v] for k, v in self.headers.items()],
            "key_header": None, "key": None, "body_len": 0, "api": "none",
            "model": None, "stream": False, "behaviour": None, "status": None,
            "usage": None, "input_tokens": None, "output_tokens": None,
            "events": [], "events_total": 0, "end": "ok",
        }
        self.rid = self.server.next_id()
        try:
            self.route()
        except Reset:
            # on up to handle_error(): the files on the socket are closed
            self.rec["end"] = "reset"
            self.close_connection = True
            raise
        except (Gone, ConnectionError, ssl.SSLError, socket.timeout) as e:
            self.rec["end"] = "client gone"
            self.close_connection = True
            if isinstance(e, socket.timeout):
                self.rec["end"] = "client timeout"
        finally:
            self.server.write_record(self.rec)

    def route(self):
        path = urllib.parse.urlsplit(self.path).path
        routes = {
            "/v1/messages": ("POST", "messages"),
            "/v1/messages/count_tokens": ("POST", "count_tokens"),
            "/v1/models": ("GET", "models"),
            "/v1/chat/completions": ("POST", "chat"),
            "/v1/responses": ("POST", "responses"),
        }
        want = routes.get(path)
        if want is None and path.startswith("/v1/models/"):
            want = ("GET", "models")
        if (path == "/v1/responses" and self.command == "GET" and
                "websocket" in self.headers.get("upgrade", "").lower()):
            want = ("GET", "ws")
        self.api = want[1] if want else "none"
        self.rec["api"] = self.api
        try:
            pause = int(self.headers.get("x-test-read-pause-ms", "0"))
        except ValueError:
            pause = 0
        if pause > 0:
            time.sleep(min(pause, READ_PAUSE_MS_MAX) / 1000.0)
        body = self.read_body()
        if want is None:
            self.api_error(404, "not_found_error",
                       "not found: %s %s" % (self.command, path))
            return
        if self.command != want[0]:
            self.api_error(405, "invalid_request_error",
                       "method %s not allowed on %s" % (self.command, path))
            return
        if not self.check_key():
            return
        if self.api == "ws":
            self.websocket()
            return
        if self.api == "models":
            self.models(path)
            return
        try:
            req = json.loads(body.decode("utf-8"))
            if not isinstance(req, dict):
                raise ValueError("not an object")
        except ValueError as e:
            self.api_error(400, "invalid_request_error",
                       "the body is not a JSON object: %s" % e)
            return
        model = req.get("model")
        self.rec["model"] = model
        self.rec["stream"] = bool(req.get("stream"))
        if isinstance(model, str) and model.startswith("test-"):
            self.rec["behaviour"] = model
        if not isinstance(model, str) or not model:
            self.api_error(400, "invalid_request_error", "model: field required")
            return
        field = "input" if self.api == "responses" else "messages"
        if field not in req:
            self.api_error(400, "invalid_request_error",
                       "%s: field required" % field)
            return
        if model == "test-error-429":
            self.api_error(429, "rate_limit_error",
                       "this request would exceed the rate limit (test-error-429)")
            return
        if model == "test-error-500":
            self.api_error(500, "api_error", "internal server error (test-error-500)")
            return
        answer = Answer(self.api, req, self.headers)
        if self.api == "count_tokens":
            self.send_json(200, {"input_tokens": answer.input})
            self.rec["input_tokens"] = answer.input
            return
        {"messages": self.anthropic_messages, "chat": self.openai_chat,
         "responses": self.openai_responses}[self.api](req, answer)

    def read_body(self):
        te = self.headers.get("transfer-encoding", "").lower()
        if "chunked" in te:
            parts, total = [], 0
            for _ in range(BODY_MAX + 1):
                line = self.rfile.readline(CHUNK_LINE_MAX)
                if not line.endswith(b"\n"):
                    raise Gone("bad chunk line")
                n = int(line.split(b";")[0].strip() or b"0", 16)
                if n == 0:
                    for _ in range(100):
                        if self.rfile.readline(CHUNK_LINE_MAX) in (b"\r\n", b"\n", b""):
                            break
                    break
                total += n
                if total > BODY_MAX:
                    raise Gone("body too large")
                parts.append(self.read_exact(n))
                self.rfile.readline(CHUNK_LINE_MAX)
            body = b"".join(parts)
        else:
            try:
                n = int(self.headers.get("content-length", "0"))
            except ValueError:
                n = -1
            if n < 0 or n > BODY_MAX:
                self.close_connection = True
                raise Gone("bad content-length")
            body = self.read_exact(n)
        self.rec["body_len"] = len(body)
        return body

    def read_exact(self, n):
        data = self.rfile.read(n)
        if len(data) != n:
            raise Gone("eof in body")
        return data

    def send_head(self, status, ctype, length=None, extra=()):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        if length is None:
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Cache-Control", "no-cache")
        else:
            self.send_header("Content-Length", str(length))
        if self.api in ANTHROPIC_APIS or (self.api == "models" and
                                          self.anthropic_models()):
            self.send_header("request-id", "req_" + self.rid)
        else:
            self.send_header("x-request-id", "req_" + self.rid)
            self.send_header("openai-processing-ms", "1")
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.rec["status"] = status

    def write(self, data):
        try:
            self.wfile.write(data)
        except (ConnectionError, ssl.SSLError) as e:
            raise Gone(str(e))

    def send_json(self, status, obj, extra=()):
        data = dumps(obj)
        self.send_head(status, "application/json", len(data), extra)
        if self.command != "HEAD":
            self.write(data)

    def anthropic_models(self):
        return "anthropic-version" in self.headers or "x-api-key" in self.headers

    def api_error(self, status, etype, message):
        """An error in the shape of the provider the path belongs to."""
        extra = [("retry-after", "1")] if status == 429 else []
        anthropic = self.api in ANTHROPIC_APIS or (
            self.api in ("models", "none") and self.anthropic_models())
        if anthropic:
            obj = {"type": "error",
                   "error": {"type": etype, "message": message},
                   "request_id": "req_" + self.rid}
        else:
            otype, code = {
                400: ("invalid_request_error", None),
                401: ("invalid_request_error", "invalid_api_key"),
                404: ("invalid_request_error", None),
                405: ("invalid_request_error", None),
                429: ("requests", "rate_limit_exceeded"),
                500: ("server_error", None),
            }.get(status, ("server_error", None))
            obj = {"error": {"message": message, "type": otype,
                             "param": None, "code": code}}
        self.send_json(status, obj, extra)

    def check_key(self):
        key = self.headers.get("x-api-key")
        if key is not None:
            self.rec["key_header"], self.rec["key"] = "x-api-key", key
            return True
        auth = self.headers.get("authorization")
        if auth is not None and auth[:7].lower() == "bearer " and auth[7:].strip():
            self.rec["key_header"], self.rec["key"] = "authorization", auth[7:].strip()
            return True
        if self.api in ANTHROPIC_APIS or (self.api == "models" and
                                          self.anthropic_models()):
            self.api_error(401, "authentication_error", "x-api-key header is required")
        else:
            self.api_error(401, "invalid_request_error",
                       "You didn't provide an API key. You need to provide your "
                       "API key in an Authorization header using Bearer auth "
                       "(i.e. Authorization: Bearer YOUR_KEY).")
        return False

    def set_usage(self, usage, inp, out):
        self.rec["usage"] = usage
        self.rec["input_tokens"] = inp
        self.rec["output_tokens"] = out

    # --- streams ----------------------------------------------------------

    def stream(self, events, sse_names, trailer=None):
        """Send events [(type, obj)] as server-sent events, each its own
        chunk, written at once; with the model's behaviour applied."""
        behaviour = self.rec["behaviour"]
        delay = min(self.server.args.event_delay_ms, EVENT_DELAY_MS_MAX) / 1000.0
        if behaviour == "test-slow":
            delay = max(delay, SLOW_DELAY_MS / 1000.0)
        self.send_head(200, "text/event-stream; charset=utf-8")
        frames = []
        for etype, obj in events:
            data = dumps(obj)
            if behaviour == "test-malformed":
                data = data[:-1]
            frame = b""
            if sse_names:
                frame += b"event: " + etype.encode() + b"\n"
            frames.append((etype, frame + b"data: " + data + b"\n\n"))
        if trailer is not None:
            frames.append(trailer)
        for i, (etype, frame) in enumerate(frames):
            if i > 0 and delay > 0:
                time.sleep(delay)
            if behaviour == "test-reset" and i == RESET_AFTER_EVENTS:
                self.reset()
            self.write(b"%x\r\n%s\r\n" % (len(frame), frame))
            self.note_event(etype)
        self.write(b"0\r\n\r\n")

    def note_event(self, etype):
        self.rec["events_total"] += 1
        if len(self.rec["events"]) < EVENT_TIMES_MAX:
            self.rec["events"].append({"t": time.time(), "type": etype})

    def reset(self):
        """A TCP reset: SO_LINGER 0 and close, no TLS close_notify.  The
        socket is closed only when the buffered files on it are too."""
        sock = self.connection
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                            struct.pack("ii", 1, 0))
            self.wfile.close()
            self.rfile.close()
            sock.close()
        except OSError:
            pass
        raise Reset()

    def plain(self, obj):
        """A whole JSON answer, with the behaviours that apply to one."""
        behaviour = self.rec["behaviour"]
        data = dumps(obj)
        if behaviour == "test-malformed":
            data = data[:-1]
        if behaviour == "test-slow":
            time.sleep(SLOW_DELAY_MS / 1000.0)
        self.send_head(200, "application/json", len(data))
        if behaviour == "test-reset":
            self.write(data[:len(data) // 2])
            self.reset()
        self.write(data)

    # --- Anthropic ----------------------------------------------------------

    def anthropic_messages(self, req, a):
        msg_id = "msg_" + self.rid
        model = req["model"]
        usage = {"input_tokens": a.input,
                 "cache_creation_input_tokens": CACHE_CREATION_TOKENS,
                 "cache_read_input_tokens": CACHE_READ_TOKENS,
                 "output_tokens": a.output}
        if not req.get("stream"):
            self.set_usage(usage, a.input, a.output)
            self.plain({"id": msg_id, "type": "message", "role": "assistant",
                        "model": model,
                        "content": [{"type": "text", "text": a.text}],
                        "stop_reason": "end_turn", "stop_sequence": None,
                        "usage": usage})
            return
        start_usage = dict(usage, output_tokens=1)
        events = [
            ("message_start", {"type": "message_start", "message": {
                "id": msg_id, "type": "message", "role": "assistant",
                "model": model, "content": [], "stop_reason": None,
                "stop_sequence": None, "usage": start_usage}}),
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": {"type": "text", "text": ""}}),
            ("ping", {"type": "ping"}),
        ]
        for p in a.pieces:
            events.append(("content_block_delta", {
                "type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": p}}))
        events += [
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta",
                               "delta": {"stop_reason": None, "stop_sequence": None},
                               "usage": {"output_tokens": len(a.pieces) + 1}}),
            ("message_delta", {"type": "message_delta",
                               "delta": {"stop_reason": "end_turn",
                                         "stop_sequence": None},
                               "usage": usage}),
            ("message_stop", {"type": "message_stop"}),
        ]
        self.set_usage(usage, a.input, a.output)
        self.stream(events, True)

    def models(self, path):
        anthropic = self.anthropic_models()
        if anthropic:
            data = [{"type": "model", "id": m, "display_name": m,
                     "created_at": "2023-11-14T22:13:20Z"} for m in MODELS]
        else:
            data = [{"id": m, "object": "model", "created": CREATED,
                     "owned_by": "provider-double"} for m in MODELS]
        if path.startswith("/v1/models/"):
            want = urllib.parse.unquote(path[len("/v1/models/"):])
            for m in data:
                if m["id"] == want:
                    self.send_json(200, m)
                    return
            self.api_error(404, "not_found_error", "model: %s" % want)
            return
        if anthropic:
            self.send_json(200, {"data": data, "has_more": False,
                            "first_id": MODELS[0], "last_id": MODELS[-1]})
        else:
            self.send_json(200, {"object": "list", "data": data})

    # --- OpenAI ---------------------------------------------------------------

    def openai_usage(self, a, responses):
        if responses:
            return {"input_tokens": a.input,
                    "input_tokens_details": {"cached_tokens": a.cached},
                    "output_tokens": a.output,
                    "output_tokens_details": {"reasoning_tokens": a.reasoning},
                    "total_tokens": a.input + a.output}
        return {"prompt_tokens": a.input, "completion_tokens": a.output,
                "total_tokens": a.input + a.output,
                "prompt_tokens_details": {"cached_tokens": a.cached,
                                          "audio_tokens": 0},
                "completion_tokens_details": {
                    "reasoning_tokens": a.reasoning, "audio_tokens": 0,
                    "accepted_prediction_tokens": 0,
                    "rejected_prediction_tokens": 0}}

    def openai_chat(self, req, a):
        cid = "chatcmpl-" + self.rid
        usage = self.openai_usage(a, False)
        base = {"id": cid, "object": "chat.completion.chunk",
                "created": CREATED, "model": req["model"],
                "system_fingerprint": "fp_test", "service_tier": "default"}
        self.set_usage(usage, a.input, a.output)
        if not req.get("stream"):
            self.plain({"id": cid, "object": "chat.completion",
                        "created": CREATED, "model": req["model"],
                        "choices": [{"index": 0, "message": {
                            "role": "assistant", "content": a.text,
                            "refusal": None, "annotations": []},
                            "logprobs": None, "finish_reason": "stop"}],
                        "usage": usage, "service_tier": "default",
                        "system_fingerprint": "fp_test"})
            return
        opts = req.get("stream_options")
        with_usage = isinstance(opts, dict) and bool(opts.get("include_usage"))
        if not with_usage:
            self.set_usage(None, None, None)

        def chunk(delta, finish):
            c = dict(base, choices=[{"index": 0, "delta": delta,
                                     "logprobs": None, "finish_reason": finish}])
            if with_usage:
                c["usage"] = None
            return ("chunk", c)

        events = [chunk({"role": "assistant", "content": "", "refusal": None}, None)]
        for i, p in enumerate(a.pieces):
            events.append(chunk({"content": p},
                                "stop" if i == len(a.pieces) - 1 else None))
        if with_usage:
            events.append(("usage", dict(base, choices=[], usage=usage)))
        self.stream(events, False, ("done", b"data: [DONE]\n\n"))

    def openai_responses(self, req, a):
        rid = "resp_" + self.rid
        item_id = "msg_" + self.rid
        usage = self.openai_usage(a, True)
        part = {"type": "output_text", "text": a.text, "annotations": [],
                "logprobs": []}
        item = {"id": item_id, "type": "message", "status": "completed",
                "role": "assistant", "content": [part]}

        def response(status, output, u):
            return {"id": rid, "object": "response", "created_at": CREATED,
                    "status": status, "error": None, "incomplete_details": None,
                    "instructions": req.get("instructions"),
                    "max_output_tokens": req.get("max_output_tokens"),
                    "model": req["model"], "output": output,
                    "parallel_tool_calls": True, "previous_response_id": None,
                    "reasoning": {"effort": None, "summary": None},
                    "store": True, "temperature": 1.0,
                    "text": {"format": {"type": "text"}},
                    "tool_choice": "auto", "tools": [], "top_p": 1.0,
                    "truncation": "disabled", "usage": u, "user": None,
                    "metadata": {}}

        self.set_usage(usage, a.input, a.output)
        if not req.get("stream"):
            self.plain(response("completed", [item], usage))
            return
        seq = [0]

        def ev(etype, **fields):
            obj = {"type": etype, "sequence_number": seq[0]}
            obj.update(fields)
            seq[0] += 1
            return (etype, obj)

        where = {"item_id": item_id, "output_index": 0, "content_index": 0}
        events = [
            ev("response.created", response=response("in_progress", [], None)),
            ev("response.in_progress", response=response("in_progress", [], None)),
            ev("response.output_item.added", output_index=0, item={
                "id": item_id, "type": "message", "status": "in_progress",
                "role": "assistant", "content": []}),
            ev("response.content_part.added", part=dict(part, text=""), **where),
        ]
        for p in a.pieces:
            events.append(ev("response.output_text.delta", delta=p,
                             logprobs=[], **where))
        events += [
            ev("response.output_text.done", text=a.text, logprobs=[], **where),
            ev("response.content_part.done", part=part, **where),
            ev("response.output_item.done", output_index=0, item=item),
            ev("response.completed", response=response("completed", [item], usage)),
        ]
        self.stream(events, True)

    # --- WebSocket (RFC 6455) -------------------------------------------------

    def websocket(self):
        key = self.headers.get("sec-websocket-key", "")
        if self.headers.get("sec-websocket-version", "") != "13" or not key:
            self.api_error(400, "invalid_request_error",
                       "a WebSocket upgrade needs Sec-WebSocket-Version 13 and a key")
            return
        accept = base64.b64encode(hashlib.sha1(key.encode("ascii") + WS_GUID)
                                  .digest()).decode("ascii")
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.send_header("x-request-id", "req_" + self.rid)
        self.end_headers()
        self.rec["status"] = 101
        self.close_connection = True
        for _ in range(WS_FRAMES_MAX):
            op, fin, payload = self.ws_read_frame()
            if op == 0x8:
                self.ws_send(0x8, payload[:125])
                self.note_event("close")
                return
            if op == 0x9:
                self.ws_send(0xA, payload[:125])
                self.note_event("pong")
            elif op in (0x0, 0x1, 0x2):
                self.ws_send(op, payload, fin)
                self.note_event({0: "continuation", 1: "text", 2: "binary"}[op])

    def ws_read_frame(self):
        head = self.read_exact(2)
        fin, op = head[0] & 0x80, head[0] & 0x0F
        masked, n = head[1] & 0x80, head[1] & 0x7F
        if n == 126:
            n = struct.unpack("!H", self.read_exact(2))[0]
        elif n == 127:
            n = struct.unpack("!Q", self.read_exact(8))[0]
        if not masked or n > WS_FRAME_MAX:
            # RFC 6455 5.1: a server closes on an unmasked client frame
            self.ws_send(0x8, struct.pack("!H", 1002 if not masked else 1009))
            raise Gone("bad WebSocket frame")
        mask = self.read_exact(4)
        data = self.read_exact(n)
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
        return op, fin, payload

    def ws_send(self, op, payload, fin=0x80):
        n = len(payload)
        if n < 126:
            head = struct.pack("!BB", fin | op, n)
        elif n < 65536:
            head = struct.pack("!BBH", fin | op, 126, n)
        else:
            head = struct.pack("!BBQ", fin | op, 127, n)
        self.write(head + payload)


def main():
    ap = argparse.ArgumentParser(
        description="a test double of the model providers' APIs (see the module text)",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    serverlib.listen_args(ap)
    ap.add_argument("--cert", required=True, help="the server's certificate (PEM)")
    ap.add_argument("--key", required=True, help="its key (PEM)")
    ap.add_argument("--log", help="one JSON line per request to this file")
    ap.add_argument("--event-delay-ms", type=int, default=0,
                    help="wait this long between the events of every stream")
    args = ap.parse_args()
    serverlib.check_bind(ap, args)

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(args.cert, args.key)
    ctx.set_alpn_protocols(["http/1.1"])

    server = Server(args, ctx)
    signal.signal(signal.SIGTERM, lambda s, f: sys.exit(0))
    signal.signal(signal.SIGINT, lambda s, f: sys.exit(0))
    timer = threading.Timer(args.lifetime, lambda: os.kill(os.getpid(),
                                                           signal.SIGTERM))
    timer.daemon = True
    timer.start()
    port = server.server_address[1]
    serverlib.write_port_file(args.port_file, port)
    errlog("listening on %s port %d (TLS)" % (args.bind, port))
    try:
        server.serve_forever(poll_interval=0.5)
    finally:
        server.server_close()
        if server.log_file is not None:
            with server.log_lock:
                server.log_file.close()


if __name__ == "__main__":
    main()
