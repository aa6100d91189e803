#!/usr/bin/env python3
"""audit.py -- select records from intutic-proxy's audit log (JSON Lines).

  audit.py --records FILE COND...   print the matching lines, as they are
  audit.py --count FILE COND...     print how many lines match
  audit.py --wait FILE COND...      wait until at least --min (1) lines
                                    match, at most --seconds (10, max 60)

A COND is KEY OP VALUE with OP one of
  =   the value's text is VALUE (a missing key or null reads as "")
  !=  it is not
  ~   it matches the regular expression VALUE (re.search)
  >= <= > <   numeric comparison (a missing or non-numeric value fails)
The text of a string is itself, of a number or boolean its JSON form
(443, true).  No COND: every record.

Every complete line must be a JSON object, or the exit status is 2; a
last line without its newline (a write in progress) is left for later.
A missing FILE is an error, except for --wait, which waits for it.
"""

import argparse
import json
import re
import sys
import time

WAIT_SECONDS_MAX = 60
LINES_MAX = 10 ** 7
COND_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(!=|>=|<=|=|~|>|<)(.*)$", re.S)


class Bad(Exception):
    pass


def parse_conds(words):
    conds = []
    for w in words:
        m = COND_RE.match(w)
        if not m:
            raise Bad("bad condition '%s': expected KEY=VALUE (or != ~ >= <= > <)" % w)
        key, op, val = m.groups()
        if op == "~":
            try:
                val = re.compile(val)
            except re.error as e:
                raise Bad("bad regular expression in '%s': %s" % (w, e))
        elif op in (">=", "<=", ">", "<"):
            try:
                val = float(val)
            except ValueError:
                raise Bad("not a number in '%s'" % w)
        conds.append((key, op, val))
    return conds


def text(v):
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    return json.dumps(v)


def matches(rec, conds):
    for key, op, val in conds:
        v = rec.get(key)
        if op == "=":
            ok = text(v) == val
        elif op == "!=":
            ok = text(v) != val
        elif op == "~":
            ok = val.search(text(v)) is not None
        else:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                return False
            ok = {">=": v >= val, "<=": v <= val, ">": v > val, "<": v < val}[op]
        if not ok:
            return False
    return True


def select(path, conds):
    """The matching lines; raises Bad on a line that is not a JSON object."""
    out = []
    with open(path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    # the last element is b"" after a final newline, or a partial line
    for n, raw in enumerate(lines[:-1][:LINES_MAX], 1):
        try:
            rec = json.loads(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            raise Bad("%s:%d: not JSON (%s): %r" % (path, n, e, raw[:200]))
        if not isinstance(rec, dict):
            raise Bad("%s:%d: not a JSON object: %r" % (path, n, raw[:200]))
        if matches(rec, conds):
            out.append(raw.decode("utf-8"))
    return out


def main():
    ap = argparse.ArgumentParser(description="select audit records (see the module text)",
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--records", action="store_const", const="records", dest="mode")
    g.add_argument("--count", action="store_const", const="count", dest="mode")
    g.add_argument("--wait", action="store_const", const="wait", dest="mode")
    ap.add_argument("--min", type=int, default=1, help="--wait: this many records")
    ap.add_argument("--seconds", type=float, default=10, help="--wait: at most (10)")
    ap.add_argument("file")
    ap.add_argument("cond", nargs="*")
    args = ap.parse_args()
    try:
        conds = parse_conds(args.cond)
        if args.mode != "wait":
            recs = select(args.file, conds)
            if args.mode == "count":
                print(len(recs))
            else:
                for r in recs:
                    print(r)
            return 0
        deadline = time.monotonic() + min(max(args.seconds, 0), WAIT_SECONDS_MAX)
        recs = []
        for _ in range(int(WAIT_SECONDS_MAX / 0.05) + 2):
            try:
                recs = select(args.file, conds)
            except FileNotFoundError:
                recs = []
            if len(recs) >= args.min:
                return 0
            if time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        sys.stderr.write("audit: %d of %d records matching %s after %gs; the log has:\n"
                         % (len(recs), args.min, " ".join(args.cond) or "(all)",
                            args.seconds))
        try:
            with open(args.file, errors="replace") as f:
                sys.stderr.write("".join(f.readlines()[-50:]))
        except OSError as e:
            sys.stderr.write("  (%s)\n" % e)
        return 1
    except Bad as e:
        sys.stderr.write("audit: %s\n" % e)
        return 2
    except OSError as e:
        sys.stderr.write("audit: cannot read '%s': %s\n" % (args.file, e.strerror))
        return 2


if __name__ == "__main__":
    sys.exit(main())
