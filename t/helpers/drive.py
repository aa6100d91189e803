#!/usr/bin/env python3
"""drive.py MODE PROXY_PORT TARGET DIR: a client connection kept open
and driven from the test.  MODE tunnel:
CONNECT TARGET through the proxy; then, for each file DIR/send.N that
appears (N = 1, 2, ...), send its bytes and write as many bytes as came
back to DIR/recv.N.  MODE http: no CONNECT; each DIR/send.N is a request,
and DIR/recv.N gets the answer's status line and its (Content-Length)
body.  The proxy's answer to the CONNECT (http: "connected") goes to
DIR/ready; when the proxy closes the connection, the time goes to
DIR/eof; the file DIR/quit makes it close and exit.

With DRIVE_AUTH=RUN:TOKEN in the environment, the CONNECT carries it as
Proxy-Authorization: Basic (a run's credentials).  Standard library only.
"""
import base64, os, select, socket, sys, time
LIFETIME = 60
READ_SECONDS = 5
mode, proxy, target, d = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]

def put(name, data):
    tmp = os.path.join(d, name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
    os.rename(tmp, os.path.join(d, name))

s = socket.create_connection(("127.0.0.1", proxy), timeout=READ_SECONDS)
buf = b""

def fill():
    global buf
    x = s.recv(65536)
    if not x:
        raise EOFError("closed")
    buf += x

def http_answer():
    """One response: its status line and Content-Length body."""
    global buf
    while b"\r\n\r\n" not in buf:
        fill()
    head, _, buf = buf.partition(b"\r\n\r\n")
    n = 0
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == b"content-length":
            n = int(v)
    while len(buf) < n:
        fill()
    body, buf = buf[:n], buf[n:]
    return head.split(b"\r\n")[0] + b"\n" + body

if mode == "tunnel":
    auth = ""
    if os.environ.get("DRIVE_AUTH"):
        auth = "Proxy-Authorization: Basic %s\r\n" % base64.b64encode(
            os.environ["DRIVE_AUTH"].encode()).decode()
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n" % (target, target, auth)).encode())
    try:
        while b"\r\n\r\n" not in buf:
            fill()
    except (OSError, EOFError):
        put("ready", b"closed\n")
        sys.exit(1)
    head, _, buf = buf.partition(b"\r\n\r\n")
    put("ready", head.split(b"\r\n")[0] + b"\n")
    if not head.startswith(b"HTTP/1.1 200"):
        sys.exit(1)
else:
    put("ready", b"connected\n")
n = 1
end = time.time() + LIFETIME
while time.time() < end:
    if os.path.exists(os.path.join(d, "quit")):
        s.close()
        sys.exit(0)
    p = os.path.join(d, "send.%d" % n)
    if os.path.exists(p):
        data = open(p, "rb").read()
        try:
            s.sendall(data)
            if mode == "http":
                out = http_answer()
            else:
                while len(buf) < len(data):
                    fill()
                out, buf = buf[:len(data)], buf[len(data):]
        except (OSError, EOFError) as e:
            out = buf + ("[%s]" % e).encode()
            buf = b""
        put("recv.%d" % n, out)
        n += 1
        continue
    r, _, _ = select.select([s], [], [], 0.05)
    if r:
        try:
            x = s.recv(65536)
        except OSError:
            x = b""
        if not x:
            put("eof", b"%.3f\n" % time.time())
            sys.exit(0)
        buf += x
sys.exit("drive.py: lifetime over")
