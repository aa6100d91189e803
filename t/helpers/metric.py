#!/usr/bin/env python3
"""metric.py -- one value from a Prometheus text exposition on stdin.

  metric.py NAME [LABELS] < metrics.txt

LABELS is 'key="value",key2="value2"' (the quotes may be left out when a
value has no comma).  Prints the value of the sample NAME whose labels
include LABELS; when several samples match, their sum.  An integral value
prints without a fraction ("3", not "3.0").  No matching sample: a message
listing the metric names present, exit 1.  A line that is not a sample or a
comment: exit 2.
"""

import math
import re
import sys

LINES_MAX = 1000000
NAME_RE = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL_RE = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(,|(?=}))')


def unescape(s):
    return s.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")


def parse_line(line):
    m = NAME_RE.match(line)
    if not m:
        raise ValueError("no metric name")
    name, i = m.group(0), m.end()
    labels = {}
    if line[i:i + 1] == "{":
        i += 1
        for _ in range(1000):
            if line[i:i + 1] == "}":
                i += 1
                break
            lm = LABEL_RE.match(line, i)
            if not lm:
                raise ValueError("bad labels")
            labels[lm.group(1)] = unescape(lm.group(2))
            i = lm.end()
        else:
            raise ValueError("too many labels")
    rest = line[i:].split()
    if not rest:
        raise ValueError("no value")
    v = rest[0]
    value = float({"+Inf": "inf", "-Inf": "-inf", "NaN": "nan"}.get(v, v))
    return name, labels, value


def parse_want(text):
    want = {}
    if not text:
        return want
    t = text.strip().strip("{}")
    for _ in range(1000):
        t = t.strip().lstrip(",").strip()
        if not t:
            break
        m = re.match(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^,]*))', t)
        if not m:
            raise ValueError("bad LABELS '%s'" % text)
        want[m.group(1)] = unescape(m.group(2)) if m.group(2) is not None else m.group(3).strip()
        t = t[m.end():]
    return want


def main():
    if len(sys.argv) not in (2, 3) or sys.argv[1] in ("-h", "--help"):
        sys.stdout.write(__doc__)
        return 0 if len(sys.argv) == 2 else 2
    name = sys.argv[1]
    try:
        want = parse_want(sys.argv[2] if len(sys.argv) == 3 else "")
    except ValueError as e:
        sys.stderr.write("metric: %s\n" % e)
        return 2
    total = 0.0
    found = 0
    names = set()
    for n, line in enumerate(sys.stdin, 1):
        if n > LINES_MAX:
            break
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            sname, labels, value = parse_line(line)
        except ValueError as e:
            sys.stderr.write("metric: line %d: %s: %r\n" % (n, e, line[:200]))
            return 2
        names.add(sname)
        if sname == name and all(labels.get(k) == v for k, v in want.items()):
            total += value
            found += 1
    if not found:
        sys.stderr.write("metric: no sample %s%s; the metrics are: %s\n"
                         % (name, "{%s}" % sys.argv[2] if len(sys.argv) == 3 else "",
                            " ".join(sorted(names)) or "(none)"))
        return 1
    if math.isfinite(total) and total == int(total) and abs(total) < 2 ** 63:
        print(int(total))
    else:
        print(repr(total))
    return 0


if __name__ == "__main__":
    sys.exit(main())
