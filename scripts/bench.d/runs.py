#!/usr/bin/env python3
"""runs.py: the control API of intutic-proxy as `scripts/bench proxy`
drives it (runs-get, runs-setup, revoke).  See intutic-proxy(8), CONTROL
API and RUNS.

  runs.py register DIR COUNT UIDS GID ORIGIN_PORT SINK_PORT OUT
      registers COUNT runs, bench-0001 ..., on DIR/control.sock, each with
      a policy of its own (policy() below); as the users UIDS
      (comma-separated numbers) in turn, with GID as their group, each
      registering a share of the runs in a process of its own: the proxy
      keeps at most 256 runs of one user.  Writes OUT/auth.txt (RUN:TOKEN,
      one a line, in the order registered), OUT/auth.b64 (the base64 of
      each, for wrk) and OUT/auth-one.txt (the first run's); prints
      "registered=N seconds=S".
  runs.py put DIR RUN INDEX deny|allow ORIGIN_PORT SINK_PORT
      changes RUN's policy (INDEX its number) to policy(), with or without
      a deny entry for sink.test; its generation read first.  Prints
      "t0=T answered=T status=N": the monotonic clock before the request
      is sent and once the answer has come.
  runs.py hup PID
      prints "t0=T" and sends SIGHUP to PID (the proxy: a reload); then
      sleeps HUP_LINGER seconds, so that its own exit does not take the
      CPU of what is measured meanwhile.
  runs.py reload DIR PID
      sends SIGHUP to PID and waits (5 s at most) until the generation of
      the rules (GET /v1/rules) has gone up: the reload took effect.

The socket is reached through DIR's descriptor, /proc/self/fd/N/
control.sock, as sun_path holds 107 bytes.  Times are time.monotonic(),
CLOCK_MONOTONIC, as benchtool's.  Every call is bounded in time.
"""
import base64
import json
import os
import secrets
import signal
import socket
import sys
import time

TIMEOUT = 10.0          # seconds for one call
REGISTER_SECONDS = 120  # for all the registrations of one user
RELOAD_SECONDS = 5
HUP_LINGER = 0.5
ANSWER_MAX = 1 << 20    # bytes of an answer


def policy(i, origin_port, sink_port, deny_sink=False):
    """Run i's policy: an allowlist of the bench's origin and sink (within
    the operator's rules), and a deny entry of its own."""
    deny = ["deny-{:04d}.test".format(i)]
    if deny_sink:
        deny.append("sink.test")
    return ("version: 1\n"
            "ports: [{}]\n"
            "allow:\n"
            "  - origin.test\n"
            "  - \"sink.test:{}\"\n"
            "deny:\n".format(origin_port, sink_port) +
            "".join("  - {}\n".format(d) for d in deny))


def call(state_dir, method, path, body=None):
    """(status, answer body) of one request on the control socket."""
    dfd = os.open(state_dir, os.O_PATH | os.O_DIRECTORY)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(TIMEOUT)
        s.connect("/proc/self/fd/{}/control.sock".format(dfd))
        data = b"" if body is None else json.dumps(body).encode()
        s.sendall("{} {} HTTP/1.1\r\nHost: localhost\r\n"
                  "Content-Type: application/json\r\n"
                  "Content-Length: {}\r\n\r\n".format(
                      method, path, len(data)).encode() + data)
        answer = b""
        while len(answer) < ANSWER_MAX:
            chunk = s.recv(65536)
            if not chunk:
                break
            answer += chunk
    finally:
        s.close()
        os.close(dfd)
    head, _, rest = answer.partition(b"\r\n\r\n")
    try:
        status = int(head.split(b" ", 2)[1])
    except (IndexError, ValueError):
        raise SystemExit("runs.py: {} {}: no answer ({!r})".format(
            method, path, answer[:80]))
    return status, rest


def register(argv):
    state_dir, count, uids, gid, oport, sport, out = argv
    count, gid = int(count), int(gid)
    uids = [int(u) for u in uids.split(",")]
    runs = [("bench-{:04d}".format(i + 1), secrets.token_hex(16))
            for i in range(count)]
    t0 = time.monotonic()
    children = []
    for k, uid in enumerate(uids):
        share = [(i, r) for i, r in enumerate(runs) if i % len(uids) == k]
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.setgroups([gid])
                os.setgid(gid)
                os.setuid(uid)
                end = time.monotonic() + REGISTER_SECONDS
                for i, (run, token) in share:
                    if time.monotonic() > end:
                        raise SystemExit("runs.py: uid {}: out of time at "
                                         "{}".format(uid, run))
                    status, body = call(state_dir, "POST", "/v1/runs", {
                        "run": run, "token": token, "command": "bench",
                        "project": None, "pid": None,
                        "policy": policy(i + 1, oport, sport)})
                    if status != 201:
                        raise SystemExit("runs.py: uid {}: registering {}: "
                                         "{} {}".format(uid, run, status,
                                                        body.decode()))
                code = 0
            except SystemExit as e:
                print(e, file=sys.stderr)
            except Exception as e:      # any failure: the child's status
                print("runs.py: uid {}: {}".format(uid, e), file=sys.stderr)
            finally:
                os._exit(code)
        children.append(pid)
    failed = 0
    for pid in children:
        _, status = os.waitpid(pid, 0)
        failed += status != 0
    seconds = time.monotonic() - t0
    with open(os.path.join(out, "auth.txt"), "w") as a, \
            open(os.path.join(out, "auth.b64"), "w") as b, \
            open(os.path.join(out, "auth-one.txt"), "w") as one:
        for run, token in runs:
            cred = "{}:{}".format(run, token)
            a.write(cred + "\n")
            b.write(base64.b64encode(cred.encode()).decode() + "\n")
        one.write("{}:{}\n".format(*runs[0]))
    status, body = call(state_dir, "GET", "/v1/runs")
    n = len(json.loads(body)["runs"]) if status == 200 else 0
    print("registered={} seconds={:.3f}".format(n, seconds))
    return 0 if failed == 0 and n == count else 1


def put(argv):
    state_dir, run, index, what, oport, sport = argv
    status, body = call(state_dir, "GET", "/v1/runs/" + run)
    if status != 200:
        raise SystemExit("runs.py: GET /v1/runs/{}: {}".format(run, status))
    doc = {"generation": json.loads(body)["generation"],
           "policy": policy(int(index), oport, sport, what == "deny")}
    t0 = time.monotonic()
    status, body = call(state_dir, "PUT", "/v1/runs/{}/policy".format(run),
                        doc)
    t1 = time.monotonic()
    print("t0={:.6f} answered={:.6f} status={}".format(t0, t1, status))
    if status != 200:
        print("runs.py: PUT: {}".format(body.decode().strip()),
              file=sys.stderr)
    return 0 if status == 200 else 1


def rules_generation(state_dir):
    status, body = call(state_dir, "GET", "/v1/rules")
    if status != 200:
        raise SystemExit("runs.py: GET /v1/rules: {}".format(status))
    return json.loads(body)["generation"]


def hup(argv):
    pid = int(argv[0])
    t0 = time.monotonic()
    os.kill(pid, signal.SIGHUP)
    print("t0={:.6f}".format(t0), flush=True)
    time.sleep(HUP_LINGER)
    return 0


def reload(argv):
    state_dir, pid = argv[0], int(argv[1])
    gen = rules_generation(state_dir)
    os.kill(pid, signal.SIGHUP)
    end = time.monotonic() + RELOAD_SECONDS
    while time.monotonic() < end:
        if rules_generation(state_dir) > gen:
            return 0
        time.sleep(0.02)
    print("runs.py: the reload did not take effect within {} s".format(
        RELOAD_SECONDS), file=sys.stderr)
    return 1


def main():
    cmds = {"register": (register, 7), "put": (put, 6), "hup": (hup, 1),
            "reload": (reload, 2)}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds or \
            len(sys.argv) - 2 != cmds[sys.argv[1]][1]:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    return cmds[sys.argv[1]][0](sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
