#!/usr/bin/env python3
"""logconf.py -- check contrib/logging against the proxy and real records.

  logconf.py DIR AUDIT_C RECORDS [SYSLOG]

DIR is contrib/logging (README.md, vector.yaml, fluent-bit.conf,
parsers.conf), AUDIT_C proxy/audit.c, RECORDS a file of audit records a real
proxy wrote (JSON Lines), SYSLOG what t/helpers/logsink.py --syslog took
from it (each with its "raw" datagram).  Neither Vector nor Fluent Bit runs
here: what their files say is read from them and applied, in Python:

  - README.md's table names every field proxy/audit.c writes, once;
  - vector.yaml's remap: its sources and filter select intutic-audit, it
    parses .message, each ".ECS = r.FIELD" line is the table's ECS name,
    and applied to each record it leaves no field behind; ts parses as
    RFC 3339;
  - fluent-bit.conf: each "Rename FIELD ECS" of its modify filter is the
    table's, applied to each record it leaves no field behind; the journal
    and syslog inputs select intutic-audit and parse MESSAGE / message;
  - parsers.conf: intutic_json's Time_Format (with %L as fractions) parses
    each record's ts; intutic_syslog's Regex (Onigmo's (?<name>) made
    Python's) matches each datagram syslog(3) sent, as sent and with a
    forwarder's host name, its ident intutic-audit and its message the
    record.

Prints what it checked; exits 1 with the first mismatch.  Standard
library only.
"""

import datetime
import json
import re
import sys


def fail(msg):
    print("logconf: " + msg, file=sys.stderr)
    sys.exit(1)


def table(path):
    rows = {}
    for line in open(path):
        m = re.match(r"^\| `([a-z_]+)` \| `([^`]+)` \| `([^`]+)` \|$", line)
        if m:
            if m.group(1) in rows:
                fail("%s: '%s' twice in the table" % (path, m.group(1)))
            rows[m.group(1)] = (m.group(2), m.group(3))
    if not rows:
        fail("%s: no field table" % path)
    return rows


def audit_fields(path):
    src = open(path).read()
    keys = set(re.findall(r'put_(?:str|num|ms|bool|key)\(&?l, "([a-z_]+)"', src))
    keys |= {"ts"}
    if re.search(r'\\"truncated\\":true', src):
        keys.add("truncated")
    return keys


def vrl_source(path):
    lines = open(path).read().split("\n")
    for i, line in enumerate(lines):
        m = re.match(r"^(\s*)source: \|$", line)
        if m:
            indent = len(m.group(1))
            body = []
            for l in lines[i + 1:]:
                if l.strip() and len(l) - len(l.lstrip()) <= indent:
                    break
                body.append(l.strip())
            return body
    fail("%s: no remap 'source: |'" % path)


def vector(path, rows):
    text = open(path).read()
    if not re.search(r"SYSLOG_IDENTIFIER: \[intutic-audit\]", text):
        fail("%s: the journald source does not select intutic-audit" % path)
    if '.appname == "intutic-audit"' not in text:
        fail("%s: the syslog filter does not select intutic-audit" % path)
    m = re.search(r"inputs: \[intutic_file, intutic_journal, intutic_only_syslog\]", text)
    if not m:
        fail("%s: the remap does not take all three sources" % path)
    body = vrl_source(path)
    if "r, err = parse_json(string!(.message))" not in body:
        fail("%s: the remap does not parse .message" % path)
    if '."@timestamp" = parse_timestamp!(r.ts, format: "%+")' not in body:
        fail("%s: @timestamp is not parsed from r.ts" % path)
    mapping = {"ts": "@timestamp"}
    for l in body:
        m = re.match(r"^\.([a-z_]+(?:\.[a-z_]+)*) = r\.([a-z_]+)$", l)
        if m:
            if m.group(2) in mapping:
                fail("%s: r.%s mapped twice" % (path, m.group(2)))
            mapping[m.group(2)] = m.group(1)
    want = {k: v[0] for k, v in rows.items()}
    if mapping != want:
        diff = sorted(set(mapping.items()) ^ set(want.items()))
        fail("%s: the remap and README.md's table differ: %r" % (path, diff))
    return mapping


def ini(path):
    sections = []
    for raw in open(path):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^\[([A-Z]+)\]$", line)
        if m:
            sections.append((m.group(1), []))
            continue
        if not sections:
            fail("%s: '%s' before any section" % (path, line))
        k, _, v = line.partition(" ")
        sections[-1][1].append((k, v.strip()))
    return sections


def first(entries, key):
    for k, v in entries:
        if k == key:
            return v
    return None


def find(sections, kind, name, **want):
    for s, entries in sections:
        if s != kind or first(entries, "Name") != name:
            continue
        if all(first(entries, k) == v for k, v in want.items()):
            return entries
    fail("no [%s] %s with %r" % (kind, name, want))


def fluentbit(path, rows):
    s = ini(path)
    find(s, "INPUT", "tail", Parser="intutic_json")
    find(s, "INPUT", "systemd", Systemd_Filter="SYSLOG_IDENTIFIER=intutic-audit")
    find(s, "FILTER", "parser", Match="intutic.audit.journal", Key_Name="MESSAGE",
         Parser="intutic_json")
    find(s, "INPUT", "syslog", Parser="intutic_syslog")
    find(s, "FILTER", "grep", Regex="ident ^intutic-audit$")
    find(s, "FILTER", "parser", Match="intutic.audit.syslog", Key_Name="message",
         Parser="intutic_json")
    mod = find(s, "FILTER", "modify")
    mapping = {}
    for k, v in mod:
        if k == "Rename":
            a, b = v.split()
            if a in mapping:
                fail("%s: %s renamed twice" % (path, a))
            mapping[a] = b
    want = {k: v[0] for k, v in rows.items()}
    if mapping != want:
        diff = sorted(set(mapping.items()) ^ set(want.items()))
        fail("%s: the Renames and README.md's table differ: %r" % (path, diff))
    return mapping


def parsers(path):
    s = ini(path)
    j = find(s, "PARSER", "intutic_json", Format="json", Time_Key="ts")
    tfmt = first(j, "Time_Format").replace("%L", "%f")
    sl = find(s, "PARSER", "intutic_syslog", Format="regex")
    rx = re.compile(first(sl, "Regex").replace("(?<", "(?P<"))
    return tfmt, rx


def main():
    if len(sys.argv) not in (4, 5):
        fail("usage: logconf.py DIR AUDIT_C RECORDS [SYSLOG]")
    d, audit_c, records = sys.argv[1:4]
    rows = table(d + "/README.md")
    fields = audit_fields(audit_c)
    if set(rows) != fields:
        fail("README.md's table and proxy/audit.c differ: in the table only "
             "%r, written only %r" % (sorted(set(rows) - fields),
                                     sorted(fields - set(rows))))
    vmap = vector(d + "/vector.yaml", rows)
    fmap = fluentbit(d + "/fluent-bit.conf", rows)
    tfmt, rx = parsers(d + "/parsers.conf")

    n = 0
    for line in open(records):
        rec = json.loads(line)
        n += 1
        left = set(rec) - set(vmap)
        if left:
            fail("vector.yaml leaves %r of %s" % (sorted(left), line.strip()))
        left = set(rec) - set(fmap)
        if left:
            fail("fluent-bit.conf leaves %r of %s" % (sorted(left), line.strip()))
        try:
            datetime.datetime.strptime(rec["ts"], tfmt)
        except ValueError as e:
            fail("parsers.conf Time_Format %r: %s" % (tfmt, e))
        try:
            datetime.datetime.fromisoformat(rec["ts"].replace("Z", "+00:00"))
        except ValueError as e:
            fail("ts is not RFC 3339: %s" % e)
    if n == 0:
        fail("no records in %s" % records)
    print("%d fields, %d records mapped by vector.yaml and fluent-bit.conf" %
          (len(rows), n))

    if len(sys.argv) == 5:
        m = 0
        for line in open(sys.argv[4]):
            raw = json.loads(line)["raw"]
            fwd = re.sub(r"^(<\d+>\w{3} [ \d]\d \d\d:\d\d:\d\d) ", r"\1 myhost ", raw)
            for text, host in ((raw, None), (fwd, "myhost")):
                g = rx.match(text)
                if not g:
                    fail("parsers.conf intutic_syslog does not match %r" % text)
                if g.group("ident") != "intutic-audit" or g.group("hostname") != host:
                    fail("intutic_syslog: ident %r host %r in %r" %
                         (g.group("ident"), g.group("hostname"), text))
                rec = json.loads(g.group("message"))
                if "event" not in rec:
                    fail("intutic_syslog: the message is no record: %r" % text)
            m += 1
        if m == 0:
            fail("no datagrams in %s" % sys.argv[4])
        print("%d syslog datagrams matched by intutic_syslog, as sent and "
              "forwarded" % m)


if __name__ == "__main__":
    main()
