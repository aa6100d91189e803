#!/usr/bin/env python3
"""audit.py -- select records from intutic-proxy's audit log (JSON Lines).

  audit.py --records FILE COND...   print the matching lines, as they are
  audit.py --count FILE COND...     print how many lines match
  audit.py --wait FILE COND...      wait until at least --min (1) lines
                                    match, at most --seconds (10, max 60)
  audit.py --since FILE --out OUT COND...
                                    the same wait (--min 0: none), then
                                    every line after the mark, matching or
                                    not, to OUT (also when the wait fails)
  audit.py --conn FILE [COND...] [-- COND...]
                                    the one connection whose records came
                                    after the mark: waits (--seconds) for a
                                    close record; then exactly one decision
                                    record must be there, matching the
                                    CONDs before "--", and exactly one
                                    close record, with the decision's id,
                                    matching those after it; --out OUT as
                                    for --since
  audit.py --settled FILE            wait (--seconds) until every
                                    connection with a decision record
                                    has its close record: nothing in
                                    flight (the control socket's records,
                                    run, run-end..., carry ids of
                                    connections that have no close record)
  audit.py --tally FILE [--others-ok] --counts C...
                                    what clients counted (load.py's OUT
                                    files C, JSON lines: client, kind,
                                    requests, up, down, t) against the
                                    records after the mark, once every
                                    connection there has its close record
                                    (waits --seconds): as many decision
                                    records as requests made, each client
                                    connection exactly one close record
                                    whose bytes_up and bytes_down are what
                                    it counted (null: it could not count,
                                    not compared), and no record of a
                                    client that is in no C (--others-ok:
                                    there may be).  A connection the
                                    client saw fail ("ok": false) needs
                                    only its close record, or no record
                                    at all (never accepted).  Prints the
                                    totals

--mark N (every mode): the first N lines are not looked at (where the log
ended when the test took its mark: wc -l).

A COND is KEY OP VALUE with OP one of
  =   the value's text is VALUE (a missing key or null reads as "")
  !=  it is not
  ~   it matches the regular expression VALUE (re.search)
  >= <= > <   numeric comparison (a missing or non-numeric value fails)
The text of a string is itself, of a number or boolean its JSON form
(443, true).  No COND: every record.

Every complete line must be a JSON object, or the exit status is 2; a
last line without its newline (a write in progress) is left for later.
A missing FILE is an error, except for the waits (--wait, --since,
--conn), which wait for it.  A wait that ends without what it waited for,
or a connection that is not as --conn says, exits 1 and shows the records.
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


def records(path, mark=0):
    """(line, record) for every complete line after the first `mark`;
    raises Bad on a line that is not a JSON object."""
    with open(path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    out = []
    # the last element is b"" after a final newline, or a partial line
    for n, raw in enumerate(lines[:-1][:LINES_MAX][mark:], mark + 1):
        try:
            rec = json.loads(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            raise Bad("%s:%d: not JSON (%s): %r" % (path, n, e, raw[:200]))
        if not isinstance(rec, dict):
            raise Bad("%s:%d: not a JSON object: %r" % (path, n, raw[:200]))
        out.append((raw.decode("utf-8"), rec))
    return out


def select(path, conds, mark=0):
    """The matching lines after the mark; raises Bad as records() does."""
    return [line for line, rec in records(path, mark) if matches(rec, conds)]


def wait_for(path, mark, seconds, done):
    """Read the records after the mark until done(records) holds or
    `seconds` (at most WAIT_SECONDS_MAX) have passed; a missing file has
    none yet.  Returns (done, records)."""
    deadline = time.monotonic() + min(max(seconds, 0), WAIT_SECONDS_MAX)
    recs = []
    for _ in range(int(WAIT_SECONDS_MAX / 0.05) + 2):
        try:
            recs = records(path, mark)
        except FileNotFoundError:
            recs = []
        if done(recs):
            return True, recs
        if time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    return False, recs


def write_out(path, recs):
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line, _ in recs))


def show(recs):
    sys.stderr.write("".join(line + "\n" for line, _ in recs) or "(none)\n")


def conn(recs, dwords, dconds, cwords, cconds):
    """What is wrong with the one connection in recs, or None."""
    decisions = [r for _, r in recs if r.get("event") == "decision"]
    closes = [r for _, r in recs if r.get("event") == "close"]
    if len(decisions) != 1:
        return "%d decision records, expected one" % len(decisions)
    d = decisions[0]
    if not matches(d, dconds):
        return "the decision record does not match %s" % " ".join(dwords)
    if len(closes) != 1 or closes[0].get("id") != d.get("id"):
        return "%d close records, expected one with id %s" % (len(closes),
                                                               d.get("id"))
    if not matches(closes[0], cconds):
        return "the close record does not match %s" % " ".join(cwords)
    return None


TALLY_SHOWN_MAX = 10


def tally(args):
    """--tally: see the module text.  Returns the exit status."""
    counts = []
    for path in args.counts:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                try:
                    counts.append(json.loads(line))
                except ValueError as e:
                    raise Bad("%s:%d: not JSON (%s)" % (path, n, e))

    def open_ids(rs):
        ids = {r.get("id") for _, r in rs}
        return ids - {r.get("id") for _, r in rs if r.get("event") == "close"}

    # every connection the client saw end well has a close record; one it
    # saw fail may have none (never accepted), so it is not waited for
    good = sum(1 for c in counts if c.get("ok", True))
    ok, recs = wait_for(args.file, args.mark, args.seconds,
                        lambda rs: not open_ids(rs) and
                        sum(r.get("event") == "close" for _, r in rs) >= good)
    wrong = []
    if not ok:
        wrong.append("after %gs: %d close records for %d client connections"
                     " that ended well, connections %s not closed"
                     % (args.seconds, sum(r.get("event") == "close" for _, r in recs),
                        good, sorted(open_ids(recs))[:TALLY_SHOWN_MAX]))
    # the records of each connection id, and the ids of each client address
    by_id, ids_of = {}, {}
    for _, r in recs:
        if r.get("event") not in ("decision", "close"):
            continue
        by_id.setdefault(r.get("id"), []).append(r)
        ids = ids_of.setdefault(r.get("client"), [])
        if r.get("id") not in ids:
            ids.append(r.get("id"))
    mine = {}
    for c in counts:
        mine.setdefault(c["client"], []).append(c)
    requests = decisions = closes = never = 0
    for client, conns in mine.items():
        conns.sort(key=lambda c: c.get("t", 0))
        ids = sorted(ids_of.pop(client, []))
        if len(ids) < len(conns):
            # one the client saw fail may never have been accepted (the
            # listener closed with it in the backlog): no records
            unseen = [c for c in conns if not c.get("ok", True)]
            while unseen and len(ids) < len(conns):
                conns.remove(unseen.pop())
                never += 1
        if len(ids) != len(conns):
            wrong.append("%s: %d connections counted, %d in the audit log"
                         % (client, len(conns), len(ids)))
            continue
        for c, cid in zip(conns, ids):
            rs = by_id[cid]
            d = [r for r in rs if r["event"] == "decision"]
            cl = [r for r in rs if r["event"] == "close"]
            requests += c["requests"]
            decisions += len(d)
            closes += len(cl)
            # a client that saw its connection fail cannot know whether
            # the proxy read its last request: only the close is checked
            if len(d) != c["requests"] and c.get("ok", True):
                wrong.append("%s (id %s): %d requests made, %d decision records"
                             % (client, cid, c["requests"], len(d)))
            if len(cl) != 1:
                wrong.append("%s (id %s): %d close records" % (client, cid, len(cl)))
                continue
            for key, want in (("bytes_up", c.get("up")), ("bytes_down", c.get("down"))):
                if want is not None and cl[0].get(key) != want:
                    wrong.append("%s (id %s): %s %s, the client counted %s"
                                 % (client, cid, key, cl[0].get(key), want))
    others = sorted(ids_of)
    if others and not args.others_ok:
        wrong.append("records of clients that counted nothing: %s"
                     % ", ".join(str(o) for o in others[:TALLY_SHOWN_MAX]))
    print("tally: %d connections, %d requests, %d decision records, %d close records"
          % (len(counts) - never, requests, decisions, closes)
          + (", %d failed connections never reached the proxy" % never if never else ""))
    if not wrong:
        return 0
    for w in wrong[:TALLY_SHOWN_MAX]:
        sys.stderr.write("audit: %s\n" % w)
    if len(wrong) > TALLY_SHOWN_MAX:
        sys.stderr.write("audit: ... and %d more\n" % (len(wrong) - TALLY_SHOWN_MAX))
    return 1


def main():
    argv = sys.argv[1:]
    cwords = []
    # --conn: the close record's CONDs follow "--" (argparse would drop it)
    if "--conn" in argv and "--" in argv and argv.index("--conn") < argv.index("--"):
        cut = argv.index("--")
        argv, cwords = argv[:cut], argv[cut + 1:]
    ap = argparse.ArgumentParser(description="select audit records (see the module text)",
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__)
    g = ap.add_mutually_exclusive_group(required=True)
    for mode in ("records", "count", "wait", "since", "conn", "settled", "tally"):
        g.add_argument("--" + mode, action="store_const", const=mode, dest="mode")
    ap.add_argument("--min", type=int, default=1,
                    help="--wait, --since: this many records")
    ap.add_argument("--seconds", type=float, default=10,
                    help="--wait, --since, --conn: at most (10)")
    ap.add_argument("--mark", type=int, default=0, help="skip the first MARK lines")
    ap.add_argument("--out", help="--since, --conn: the lines after the mark")
    ap.add_argument("--others-ok", action="store_true",
                    help="--tally: records of other clients are allowed")
    ap.add_argument("--counts", nargs="+", default=[],
                    help="--tally: the clients' counts (load.py OUT files)")
    ap.add_argument("file")
    ap.add_argument("cond", nargs="*")
    args = ap.parse_args(argv)
    if args.mode == "since" and not args.out:
        ap.error("--since needs --out")
    if args.mark < 0:
        ap.error("--mark must not be negative")
    try:
        conds = parse_conds(args.cond)
        if args.mode in ("records", "count"):
            recs = select(args.file, conds, args.mark)
            if args.mode == "count":
                print(len(recs))
            else:
                for r in recs:
                    print(r)
            return 0
        if args.mode == "settled":
            def open_ids(rs):
                ids = {r.get("id") for _, r in rs if r.get("event") == "decision"}
                return ids - {r.get("id") for _, r in rs if r.get("event") == "close"}
            ok, recs = wait_for(args.file, 0, args.seconds,
                                lambda rs: not open_ids(rs))
            if ok:
                return 0
            sys.stderr.write("audit: connections %s still have no close record after %gs\n"
                             % (sorted(open_ids(recs)), args.seconds))
            return 1
        if args.mode == "tally":
            return tally(args)
        if args.mode == "conn":
            cconds = parse_conds(cwords)
            def closed(rs):
                return any(r.get("event") == "close" for _, r in rs)
            _, recs = wait_for(args.file, args.mark, args.seconds, closed)
            if args.out:
                write_out(args.out, recs)
            wrong = conn(recs, args.cond, conds, cwords, cconds)
            if wrong is None:
                return 0
            sys.stderr.write("audit: %s; the records since the mark:\n" % wrong)
            show(recs)
            return 1
        def matching(rs):
            return sum(matches(r, conds) for _, r in rs)
        ok, recs = wait_for(args.file, args.mark, args.seconds,
                            lambda rs: matching(rs) >= args.min)
        got = matching(recs)
        if args.mode == "since":
            write_out(args.out, recs)
            if ok:
                return 0
            sys.stderr.write("audit: %d of %d records matching %s after the mark,"
                             " after %gs; the records since the mark:\n"
                             % (got, args.min, " ".join(args.cond) or "(all)",
                                args.seconds))
            show(recs)
            return 1
        if ok:
            return 0
        sys.stderr.write("audit: %d of %d records matching %s after %gs; the log has:\n"
                         % (got, args.min, " ".join(args.cond) or "(all)",
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
        sys.stderr.write("audit: cannot read or write '%s': %s\n"
                         % (e.filename or args.file, e.strerror))
        return 2


if __name__ == "__main__":
    sys.exit(main())
