#!/usr/bin/env python3
"""proxy-report.py RESULTS META FAILURES [MARKDOWN]: the table of
`scripts/bench proxy`.

RESULTS holds one line per measurement: ROUND, PROXY, METRIC, VALUE (or
FAIL), tab-separated.  Each cell is the median of the rounds that did not
fail; a cell with failed rounds says how many.
"""
import statistics
import sys

PROXIES = ["direct", "intutic", "squid", "tinyproxy", "relay"]
# Compared with intutic in a column each; "relay" is the yardstick.
ANCHORS = ["squid", "tinyproxy", "relay"]

# key, label, unit format, higher is better, target
#   target: ("ratio", X) intutic/direct >= X; ("max", X) intutic <= X;
#           ("eq", X) intutic == X; None.
METRICS = [
    ("get_rps", "GET req/s (absolute-form, 64 conns)", "{:,.0f}", True,
     ("ratio", 0.5)),
    ("get_p50", "GET latency p50 (ms)", "{:.3f}", False, None),
    ("get_p99", "GET latency p99 (ms)", "{:.3f}", False, None),
    ("bulk_up_1", "CONNECT bulk up, 1 tunnel (MiB/s)", "{:,.0f}", True,
     ("ratio", 0.8)),
    ("bulk_down_1", "CONNECT bulk down, 1 tunnel (MiB/s)", "{:,.0f}", True,
     ("ratio", 0.8)),
    ("bulk_up_8", "CONNECT bulk up, 8 tunnels (MiB/s)", "{:,.0f}", True,
     ("ratio", 0.8)),
    ("bulk_down_8", "CONNECT bulk down, 8 tunnels (MiB/s)", "{:,.0f}", True,
     ("ratio", 0.8)),
    ("setup_rate_1", "CONNECT set-up/s, 1 at a time", "{:,.0f}", True,
     ("ratio", 0.5)),
    ("setup_rate_8", "CONNECT set-up/s, 8 at a time", "{:,.0f}", True,
     ("ratio", 0.5)),
    ("setup_p50", "CONNECT set-up p50 (ms), 1 at a time", "{:.3f}", False,
     None),
    ("setup_p99", "CONNECT set-up p99 (ms), 1 at a time", "{:.3f}", False,
     None),
    ("idle_kib", "RSS per idle tunnel (KiB, {idle_n} tunnels)", "{:.2f}",
     False, ("max", 4.0)),
    ("many_held", "tunnels held of {many_n}", "{:,.0f}", True,
     ("eq", None)),
    ("many_mib", "RSS holding {many_n} tunnels (MiB)", "{:,.1f}", False,
     None),
]


def load(path):
    """{(proxy, metric): {round: value}}."""
    by_round = {}
    for line in open(path):
        parts = line.rstrip("\n").split("\t")
        if len(parts) != 4:
            continue
        rnd, proxy, metric, value = parts
        by_round.setdefault((proxy, metric), {})[rnd] = value
    return by_round


def round_ratios(by_round, key):
    """intutic over direct in each round where both have a figure: the
    two ran minutes apart at most, so a machine that sped up or slowed
    down between rounds moves both."""
    mine = by_round.get(("intutic", key), {})
    theirs = by_round.get(("direct", key), {})
    out = []
    for rnd in sorted(mine, key=int):
        a, b = mine[rnd], theirs.get(rnd)
        if a in ("FAIL", "") or b in (None, "FAIL", "") or float(b) == 0:
            continue
        out.append(float(a) / float(b))
    return out


def meta_dict(path):
    d = {}
    for line in open(path):
        if line.startswith("versions:"):
            d["versions"] = line.split(":", 1)[1].strip()
            continue
        for word in line.split():
            if "=" in word:
                k, v = word.split("=", 1)
                d[k] = v
    return d


def cell(values):
    """(median or None, text suffix for failed rounds)."""
    if not values:
        return None, ""
    ok = [float(v) for v in values if v not in ("FAIL", "")]
    failed = len(values) - len(ok)
    note = "" if failed == 0 else " ({}/{} failed)".format(failed,
                                                           len(values))
    if not ok:
        return None, "FAIL" + (note if len(values) > 1 else "")
    return statistics.median(ok), note


def fmt_ratio(a, b):
    if a is None or b is None or b == 0:
        return "-"
    return "{:.2f}".format(a / b)


def main():
    results, meta_path, failures_path = sys.argv[1:4]
    markdown = sys.argv[4] if len(sys.argv) > 4 else None
    by_round = load(results)
    data = {k: list(v.values()) for k, v in by_round.items()}
    meta = meta_dict(meta_path)
    idle_n = int(meta.get("idle_n", "2000"))
    many_n = int(meta.get("many_n", "10000"))

    header = ["measurement"] + PROXIES + [
        "intutic/direct", "by round", "intutic/squid", "intutic/tinyproxy",
        "intutic/relay", "target", "result"]
    rows = []
    for key, label, f, higher, target in METRICS:
        label = label.format(idle_n="{:,}".format(idle_n),
                             many_n="{:,}".format(many_n))
        vals, texts = {}, []
        for p in PROXIES:
            v, note = cell(data.get((p, key), []))
            vals[p] = v
            if v is None:
                texts.append(note if note else "-")
            else:
                texts.append(f.format(v) + note)
        paired = round_ratios(by_round, key)
        spread = "-" if len(paired) < 2 else "{:.2f}-{:.2f}".format(
            min(paired), max(paired))
        ratios = ["{:.2f}".format(statistics.median(paired))
                  if paired else "-", spread] + [
            fmt_ratio(vals["intutic"], vals[p]) for p in ANCHORS]
        ttext, result = "", ""
        # Not run at all (--only, --with): nothing to judge, not a failure.
        ran = bool(data.get(("intutic", key))) and (
            target is None or target[0] != "ratio" or
            bool(data.get(("direct", key))))
        if target is not None:
            kind, x = target
            v = vals["intutic"]
            if kind == "ratio":
                ttext = ">= {:.1f} of direct".format(x)
                r = statistics.median(paired) if paired else None
                result = "FAIL" if r is None else (
                    "pass" if r >= x else "miss")
            elif kind == "max":
                ttext = "<= {:g} KiB".format(x)
                result = "FAIL" if v is None else (
                    "pass" if v <= x else "miss")
            elif kind == "eq":
                ttext = "all {:,} held".format(many_n)
                result = "FAIL" if v is None else (
                    "pass" if v >= many_n else "miss")
        if not ran:
            result = "-"
        rows.append([label] + texts + ratios + [ttext, result])

    widths = [max(len(str(r[i])) for r in rows + [header])
              for i in range(len(header))]

    def line(r):
        return "  ".join(
            (str(c).ljust(widths[i]) if i == 0 else str(c).rjust(widths[i]))
            for i, c in enumerate(r)).rstrip()

    out = [line(header), line(["-" * w for w in widths])]
    out += [line(r) for r in rows]
    pin = meta.get("pin") == "1"
    notes = [
        "Medians of {} round(s), interleaved (each round rotates the order)."
        .format(meta.get("rounds", "?")),
        ("CPU pinning: the proxy under test on CPU {}, wrk / benchtool / "
         "nginx / sink on CPU {}; direct = client and server on CPU {} "
         "alone.".format(meta.get("cpu_proxy"), meta.get("cpu_load"),
                         meta.get("cpu_load")))
        if pin else "No CPU pinning: every process on every CPU.",
        ("GET: wrk -t1 -c{} -d{}s, a 100-byte file from nginx; bulk: {} MiB "
         "per run; set-up: {} s per run, CONNECT sink.test + one echo "
         "round-trip + close; intutic-proxy --workers {}.".format(
             meta.get("get_conns"), meta.get("get_secs"),
             meta.get("bulk_mib"), meta.get("setup_secs"),
             meta.get("workers"))),
        "Ratios are intutic's value over the other's (for latency and RSS, "
        "lower is better). intutic/direct is the median of the rounds' own "
        "ratios (each round measures both within minutes, so a change in "
        "the machine's speed between rounds cancels out), and the targets "
        "judge it; 'by round' is their range.",
        "relay: `benchtool relay`, the least a CONNECT proxy can do "
        "(blocking, one tunnel at a time; no names, rules, log or event "
        "loop), on the proxy's CPU, with one tunnel only: it does just the "
        "work every proxy must, so it is about the most a proxy can reach "
        "here.",
        "Versions: " + meta.get("versions", "?"),
    ]
    wanted = int(meta.get("many_wanted", many_n))
    if wanted > many_n:
        notes.append(
            "Many tunnels: {:,} held, not {:,}: RLIMIT_NOFILE's hard limit "
            "here is {} (cannot be raised: no CAP_SYS_RESOURCE), and a "
            "tunnel takes 2 descriptors in a proxy.".format(
                many_n, wanted, meta.get("nofile")))
    notes += [
        "Elapsed: {} s; 1-minute load average {} at the start, {} at the "
        "end (2 CPUs: above 1 means other work shared the machine and the "
        "figures are noisy).".format(meta.get("elapsed", "?"),
                                     meta.get("load_start", "?"),
                                     meta.get("load_end", "?")),
    ]
    failures = open(failures_path).read().strip()

    print("\n".join(out))
    print()
    for n in notes:
        print(n)
    if failures:
        print("\nFailures and warnings:")
        print(failures)

    if markdown:
        with open(markdown, "w") as fp:
            fp.write("| " + " | ".join(header) + " |\n")
            fp.write("|" + "|".join(
                ["---"] + ["---:"] * (len(header) - 1)) + "|\n")
            for r in rows:
                fp.write("| " + " | ".join(str(c) for c in r) + " |\n")
            fp.write("\n")
            for n in notes:
                fp.write("- " + n + "\n")
            if failures:
                fp.write("\nFailures and warnings:\n\n```\n" + failures +
                         "\n```\n")


if __name__ == "__main__":
    main()
