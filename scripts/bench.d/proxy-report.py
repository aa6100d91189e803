#!/usr/bin/env python3
"""proxy-report.py RESULTS META FAILURES [MARKDOWN]: the tables of
`scripts/bench proxy`.

RESULTS holds one line per measurement: ROUND, PROXY, METRIC, VALUE (or
FAIL), tab-separated.  Each cell is the median of the rounds that did not
fail; a cell with failed rounds says how many.  The first table sets the
proxies side by side; the second, intutic-proxy with 1,000 runs against
the same requests without credentials (runs-get, runs-setup); the third,
the revocation of open tunnels (revoke), in milliseconds.
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


# intutic-proxy with runs: key (with {} for "anon" or "runs"), label,
# format, higher is better, and the target: the lowest ratio runs/anon
# it allows (higher is better) or the highest (lower is better), None.
# "Within 5%": rates at least 0.95 of those without runs, the proxy's
# CPU per request at most 1/0.95 of it (what the rates would show on a
# machine where nothing else took the proxy's CPU).
RUNS_METRICS = [
    ("runs_get_{}_rps", "GET req/s (absolute-form, 64 conns)", "{:,.0f}",
     True, 0.95),
    ("runs_get_{}_p50", "GET latency p50 (ms)", "{:.3f}", False, None),
    ("runs_get_{}_p99", "GET latency p99 (ms)", "{:.3f}", False, None),
    ("runs_get_{}_cpu_us", "GET: proxy CPU per request (us)", "{:.2f}",
     False, 1 / 0.95),
    ("runs_setup_{}_rate_1", "CONNECT set-up/s, 1 at a time", "{:,.0f}",
     True, 0.95),
    ("runs_setup_{}_rate_8", "CONNECT set-up/s, 8 at a time", "{:,.0f}",
     True, 0.95),
    ("runs_setup_{}_p50", "CONNECT set-up p50 (ms), 1 at a time", "{:.3f}",
     False, None),
    ("runs_setup_{}_p99", "CONNECT set-up p99 (ms), 1 at a time", "{:.3f}",
     False, None),
    ("runs_setup_{}_cpu_us_1", "set-up: proxy CPU per set-up (us), 1 at a "
     "time", "{:.2f}", False, 1 / 0.95),
    ("runs_setup_{}_cpu_us_8", "set-up: proxy CPU per set-up (us), 8 at a "
     "time", "{:.2f}", False, 1 / 0.95),
]

# The revocation of open tunnels: key, label, format, target (at most, ms;
# "all": every tunnel closed), None.
REVOKE_METRICS = [
    ("revoke_put_answer_ms", "PUT of the run's policy: answered (ms)",
     "{:.1f}", 100),
    ("revoke_put_first_ms", "PUT: the first tunnel closed (ms)", "{:.1f}",
     None),
    ("revoke_put_last_ms", "PUT: the last tunnel closed (ms)", "{:.1f}",
     100),
    ("revoke_put_closed", "PUT: tunnels closed of {revoke_n}", "{:,.0f}",
     "all"),
    ("revoke_put_cpu_ms", "PUT: proxy CPU meanwhile (ms)", "{:.1f}", None),
    ("revoke_hup_first_ms", "SIGHUP: the first tunnel closed (ms)",
     "{:.1f}", None),
    ("revoke_hup_last_ms", "SIGHUP: the last tunnel closed (ms)", "{:.1f}",
     100),
    ("revoke_hup_closed", "SIGHUP: tunnels closed of {revoke_n}",
     "{:,.0f}", "all"),
    ("revoke_hup_cpu_ms", "SIGHUP: proxy CPU meanwhile (ms)", "{:.1f}",
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


def round_ratios(by_round, key, other=("direct", None)):
    """intutic over direct (or over the proxy and metric `other`) in each
    round where both have a figure: the two ran minutes apart at most, so
    a machine that sped up or slowed down between rounds moves both."""
    mine = by_round.get(("intutic", key), {})
    theirs = by_round.get((other[0], other[1] or key), {})
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


def table(header, rows):
    """The lines of a plain-text table, the first column to the left."""
    widths = [max(len(str(r[i])) for r in rows + [header])
              for i in range(len(header))]

    def line(r):
        return "  ".join(
            (str(c).ljust(widths[i]) if i == 0 else str(c).rjust(widths[i]))
            for i, c in enumerate(r)).rstrip()

    return [line(header), line(["-" * w for w in widths])] + [
        line(r) for r in rows]


def markdown_table(header, rows):
    return ["| " + " | ".join(header) + " |",
            "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"] + [
        "| " + " | ".join(str(c) for c in r) + " |" for r in rows]


def runs_rows(by_round, data):
    """The rows of intutic-proxy with runs, against without; [] when
    neither runs-get nor runs-setup ran."""
    rows = []
    for key, label, f, higher, target in RUNS_METRICS:
        anon, runs = key.format("anon"), key.format("runs")
        if not data.get(("intutic", anon)) and \
                not data.get(("intutic", runs)):
            continue
        texts = []
        for k in (anon, runs):
            v, note = cell(data.get(("intutic", k), []))
            texts.append((note or "-") if v is None else f.format(v) + note)
        paired = round_ratios(by_round, runs, ("intutic", anon))
        ratio = statistics.median(paired) if paired else None
        spread = "-" if len(paired) < 2 else "{:.3f}-{:.3f}".format(
            min(paired), max(paired))
        ttext = result = ""
        if target is not None:
            ttext = "{} {:.2f}".format(">=" if higher else "<=", target)
            result = "FAIL" if ratio is None else (
                "pass" if (ratio >= target if higher else ratio <= target)
                else "miss")
        rows.append([label] + texts + [
            "-" if ratio is None else "{:.3f}".format(ratio), spread,
            ttext, result])
    return rows


def revoke_rows(data, revoke_n):
    rows = []
    for key, label, f, target in REVOKE_METRICS:
        values = data.get(("intutic", key), [])
        if not values:
            continue
        v, note = cell(values)
        ok = sorted(float(x) for x in values if x not in ("FAIL", ""))
        spread = "-" if len(ok) < 2 else (f + "-" + f).format(ok[0], ok[-1])
        ttext = result = ""
        if target == "all":
            ttext = "all {:,}".format(revoke_n)
            result = "FAIL" if v is None else (
                "pass" if v >= revoke_n else "miss")
        elif target is not None:
            ttext = "< {} ms".format(target)
            result = "FAIL" if v is None else (
                "pass" if v < target else "miss")
        rows.append([label.format(revoke_n="{:,}".format(revoke_n)),
                     (note or "-") if v is None else f.format(v) + note,
                     spread, ttext, result])
    return rows


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

    # Only the rows measured: with --only, the others would be all "-".
    rows = [r for r in rows if r[-1] != "-" or any(
        c != "-" for c in r[1:1 + len(PROXIES)])]
    runs_n = int(meta.get("runs_n", "1000"))
    revoke_n = int(meta.get("revoke_n", "1000"))
    runs_header = ["intutic-proxy", "no run", "{:,} runs".format(runs_n),
                   "runs/no run", "by round", "target", "result"]
    rrows = runs_rows(by_round, data)
    revoke_header = ["revocation of {:,} open tunnels".format(revoke_n),
                     "median", "range", "target", "result"]
    vrows = revoke_rows(data, revoke_n)
    out = []
    if rows:
        out += table(header, rows)
    if rrows:
        out += ([""] if out else []) + table(runs_header, rrows)
    if vrows:
        out += ([""] if out else []) + table(revoke_header, vrows)
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
    if rrows or vrows:
        notes.append(
            "Runs: {:,} registered on the control socket in {} s, by {} "
            "users ({}; at most {} runs of one user), each with a policy of "
            "its own (an allowlist of the origin and the sink, a deny entry "
            "of its own). 'no run': the same requests without credentials, "
            "decided by the operator's rules alone, in the same rounds, each "
            "going first in turn; runs/no run is the median of the rounds' own "
            "ratios. GET: each request the next run's (wrk hands out "
            "prepared requests, the same way for both); set-up: each "
            "connection the next run's. Proxy CPU: the CPU time its "
            "threads had (schedstat) over the requests answered; other "
            "work on the machine changes it far less than the rates, "
            "which follow the share of its CPU the proxy got.".format(
                runs_n, meta.get("reg_secs", "?"),
                len(meta.get("runs_uids", "").split(",")),
                meta.get("runs_uids", "?"), meta.get("runs_per_user", "?")))
    if vrows:
        notes.append(
            "Revocation: {:,} tunnels to sink.test held open, then "
            "sink.test denied. PUT: all {:,} tunnels of one run "
            "(bench-0001), a PUT of its policy with a deny entry for "
            "sink.test, timed from before the request: to its answer "
            "(given once every worker has decided its connections again) "
            "and to the end (EOF or reset) the first and the last tunnel "
            "saw. SIGHUP: one tunnel of each run, sink.test taken out of "
            "the operator's rules, timed from the signal. Put back after "
            "each. Proxy CPU: what its threads had from just before the "
            "change to the last end (on a busy machine the times above "
            "also hold the waits for a CPU).".format(revoke_n, revoke_n))
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

    if out:
        print("\n".join(out))
        print()
    for n in notes:
        print(n)
    if failures:
        print("\nFailures and warnings:")
        print(failures)

    if markdown:
        with open(markdown, "w") as fp:
            for h, rs in ((header, rows), (runs_header, rrows),
                          (revoke_header, vrows)):
                if rs:
                    fp.write("\n".join(markdown_table(h, rs)) + "\n\n")
            for n in notes:
                fp.write("- " + n + "\n")
            if failures:
                fp.write("\nFailures and warnings:\n\n```\n" + failures +
                         "\n```\n")


if __name__ == "__main__":
    main()
