#!/usr/bin/env python3
"""k8s-manifests.py -- contrib/kubernetes's manifests, read and checked.

  k8s-manifests.py DIR OPTIONS-FILE OUT

DIR holds intutic.yaml and agent-example.yaml.  OPTIONS-FILE lists the
options the proxy container may pass, one a line, as `intutic start --help`
and `intutic-proxy --help` name them, each followed by " ARG" when it takes
a value.  Checks what needs no cluster (see contrib/kubernetes/README.md,
"What the test checks") and writes into OUT, for the script to run:

  rules/NAME       each file of the rules ConfigMap
  proxy.args       the proxy container's command and arguments, one a line
  reloader.sh      the reloader's script; reloader.env its environment
  facts            "KEY VALUE" lines: port, rules, state_dir, probe_path

A failed check: a message and exit 1.  Needs PyYAML (python3-yaml).
"""

import os
import sys

import yaml

API = {
    "Namespace": "v1", "ConfigMap": "v1", "Service": "v1", "Pod": "v1",
    "DaemonSet": "apps/v1", "NetworkPolicy": "networking.k8s.io/v1",
}
NAMESPACE = "intutic"
PROXY = "proxy"
RELOADER = "reloader"


class Bad(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Bad(what)


def load(path):
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    for d in docs:
        kind = d.get("kind")
        check(kind in API, "%s: unknown kind %r" % (path, kind))
        check(d.get("apiVersion") == API[kind],
              "%s: %s has apiVersion %r, not %r" % (path, kind,
                                                   d.get("apiVersion"),
                                                   API[kind]))
        md = d.get("metadata") or {}
        check(md.get("name"), "%s: a %s without metadata.name" % (path, kind))
        if kind != "Namespace":
            check(md.get("namespace") == NAMESPACE,
                  "%s: %s %s is not in namespace %s" % (path, kind,
                                                        md["name"],
                                                        NAMESPACE))
    return docs


def one(docs, kind, name=None):
    found = [d for d in docs if d["kind"] == kind and
             (name is None or d["metadata"]["name"] == name)]
    check(len(found) == 1, "%d %s %s, expected one" % (len(found), kind,
                                                       name or ""))
    return found[0]


def selects(sel, labels):
    """A LabelSelector (matchLabels, matchExpressions) against labels."""
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in sel.get("matchExpressions") or []:
        k, op, vals = e["key"], e["operator"], e.get("values") or []
        if op == "In" and labels.get(k) not in vals:
            return False
        if op == "NotIn" and k in labels and labels[k] in vals:
            return False
        if op == "Exists" and k not in labels:
            return False
        if op == "DoesNotExist" and k in labels:
            return False
        check(op in ("In", "NotIn", "Exists", "DoesNotExist"),
              "unknown operator %r" % op)
    return True


def container(spec, name):
    found = [c for c in spec["containers"] if c["name"] == name]
    check(len(found) == 1, "no container %r" % name)
    return found[0]


def options(path):
    opts = {}
    with open(path) as f:
        for line in f:
            w = line.split()
            if w:
                opts[w[0]] = len(w) > 1
    return opts


def main():
    top, optfile, out = sys.argv[1:4]
    docs = load(os.path.join(top, "intutic.yaml"))
    agents = load(os.path.join(top, "agent-example.yaml"))
    one(docs, "Namespace", NAMESPACE)
    ds = one(docs, "DaemonSet")
    tpl = ds["spec"]["template"]
    labels = tpl["metadata"]["labels"]
    spec = tpl["spec"]
    check(selects(ds["spec"]["selector"], labels),
          "the DaemonSet's selector does not match its pods' labels")

    # the proxy container: every option one that start or the proxy knows
    pc = container(spec, PROXY)
    argv = pc["command"] + pc["args"]
    check(argv[:2] == ["/usr/bin/intutic", "start"],
          "the proxy container does not run intutic start: %r" % argv[:2])
    known = options(optfile)
    given = {}
    i = 2
    while i < len(argv):
        a = argv[i]
        check(a in known, "the proxy container passes %r, which neither "
              "intutic start nor intutic-proxy knows" % a)
        if known[a]:
            check(i + 1 < len(argv) and not argv[i + 1].startswith("--"),
                  "%s without its value" % a)
            given[a] = argv[i + 1]
            i += 2
        else:
            given[a] = True
            i += 1
    for a in ("--rules", "--bind", "--port", "--state-dir", "--audit"):
        check(a in given, "the proxy container passes no %s" % a)
    check(given["--audit"] == "-", "the audit log does not go to the "
          "container's log (--audit -)")
    port = int(given["--port"])

    # the ports: container, probes, Service, policies, annotation
    cports = {p["name"]: p["containerPort"] for p in pc["ports"]}
    check(list(cports.values()) == [port],
          "container ports %r, --port %d" % (cports, port))
    for probe in ("readinessProbe", "livenessProbe"):
        g = pc[probe]["httpGet"]
        check(g["path"] == "/healthz", "%s asks %s" % (probe, g["path"]))
        check(cports.get(g["port"], g["port"]) == port,
              "%s asks port %r" % (probe, g["port"]))
    ann = tpl["metadata"].get("annotations") or {}
    check(ann.get("prometheus.io/port") == str(port) and
          ann.get("prometheus.io/path") == "/metrics",
          "the Prometheus annotations do not name /metrics on %d" % port)
    svc = one(docs, "Service")
    check(selects({"matchLabels": svc["spec"]["selector"]}, labels),
          "the Service does not select the proxy's pods")
    check(svc["spec"].get("internalTrafficPolicy") == "Local",
          "the Service does not keep agents on their node's proxy")
    for p in svc["spec"]["ports"]:
        check(cports.get(p["targetPort"], p["targetPort"]) == port,
              "the Service's targetPort %r" % p["targetPort"])
    check(not svc["metadata"]["name"].upper().replace("-", "_")
          .startswith("INTUTIC"), "the Service's name makes variables "
          "named INTUTIC_... in the namespace's pods")
    check(spec.get("enableServiceLinks") is False,
          "the proxy's pods get the Services' variables")

    # the volumes the proxy and the reloader share, at the same paths
    rules, state = given["--rules"], given["--state-dir"]
    rc = container(spec, RELOADER)
    env = {e["name"]: e["value"] for e in rc.get("env") or []}
    check(env.get("RULES_DIR") == os.path.dirname(rules),
          "the reloader watches %r, the proxy reads %r" %
          (env.get("RULES_DIR"), rules))
    check(env.get("STATE_DIR") == state, "the reloader's STATE_DIR %r, the "
          "proxy's %r" % (env.get("STATE_DIR"), state))
    check(spec.get("shareProcessNamespace") is True,
          "the reloader cannot see the proxy's process")
    vols = {v["name"]: v for v in spec["volumes"]}
    for c in (pc, rc):
        mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
        check(mounts.get(os.path.dirname(rules)) in vols and
              mounts.get(state) in vols, "container %s does not mount "
              "the rules and the state directory" % c["name"])
        check(c["securityContext"].get("readOnlyRootFilesystem") is True
              and c["securityContext"]["capabilities"]["drop"] == ["ALL"]
              and c["securityContext"]["allowPrivilegeEscalation"] is
              False, "container %s is not locked down" % c["name"])
        check(c["image"] == pc["image"], "the reloader's image is not the "
              "proxy's")
    cm_name = vols[{m["mountPath"]: m["name"] for m in
                    pc["volumeMounts"]}[os.path.dirname(rules)]]
    cm = one(docs, "ConfigMap", cm_name["configMap"]["name"])
    check(os.path.basename(rules) in cm["data"],
          "the ConfigMap has no %s" % os.path.basename(rules))
    os.makedirs(os.path.join(out, "rules"), exist_ok=True)
    for k, v in cm["data"].items():
        with open(os.path.join(out, "rules", k), "w") as f:
            f.write(v)

    # the policies: agents reach the proxy's port and nothing else; the
    # proxy reaches DNS and the internet
    agent = one(agents, "Pod")
    alabels = agent["metadata"]["labels"]
    pols = [d for d in docs if d["kind"] == "NetworkPolicy"]
    ap = [p for p in pols if not selects(p["spec"]["podSelector"], labels)]
    pp = [p for p in pols if selects(p["spec"]["podSelector"], labels)]
    check(len(ap) == 1 and len(pp) == 1,
          "expected one policy for the agents and one for the proxy")
    ap, pp = ap[0]["spec"], pp[0]["spec"]
    check(selects(ap["podSelector"], alabels),
          "the agents' policy does not select the example agent")
    check(sorted(ap["policyTypes"]) == ["Egress", "Ingress"] and
          ap.get("ingress") == [], "the agents' policy is not default-deny")
    check(len(ap["egress"]) == 1, "the agents may go more than one way")
    eg = ap["egress"][0]
    check(len(eg["to"]) == 1 and list(eg["to"][0]) == ["podSelector"] and
          selects(eg["to"][0]["podSelector"], labels),
          "the agents' way out is not the proxy's pods")
    check(eg["ports"] == [{"protocol": "TCP", "port": port}],
          "the agents' way out is not the proxy's port")
    check(any(selects(f.get("podSelector", {"matchLabels": {"x": "y"}}),
                      alabels) for r in pp["ingress"] for f in r["from"])
          and all(r["ports"] == [{"protocol": "TCP", "port": port}]
                  for r in pp["ingress"]),
          "the agents may not reach the proxy's port")
    blocks = [t["ipBlock"] for r in pp["egress"] for t in r["to"]
              if "ipBlock" in t]
    v4 = [b for b in blocks if b["cidr"] == "0.0.0.0/0"]
    check(len(v4) == 1 and {"10.0.0.0/8", "172.16.0.0/12",
                            "192.168.0.0/16", "169.254.0.0/16"} <=
          set(v4[0].get("except") or []),
          "the proxy's way out includes the private ranges")

    # the example agent: the proxy variables name the Service's
    aenv = {e["name"]: e["value"] for e in
            agent["spec"]["containers"][0]["env"]}
    base = svc["metadata"]["name"].upper().replace("-", "_")
    want = "http://$(%s_SERVICE_HOST):$(%s_SERVICE_PORT)" % (base, base)
    for k in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"):
        check(aenv.get(k) == want, "the example agent's %s is %r, not %r" %
              (k, aenv.get(k), want))

    with open(os.path.join(out, "proxy.args"), "w") as f:
        f.write("".join(a + "\n" for a in argv))
    with open(os.path.join(out, "reloader.sh"), "w") as f:
        check(rc["command"] == ["/bin/sh", "-c"] and len(rc["args"]) == 1,
              "the reloader is not one sh -c script")
        f.write(rc["args"][0])
    with open(os.path.join(out, "reloader.env"), "w") as f:
        f.write("".join("%s %s\n" % kv for kv in env.items()))
    with open(os.path.join(out, "facts"), "w") as f:
        f.write("port %d\nrules %s\nstate_dir %s\nprobe_path /healthz\n" %
                (port, rules, state))


if __name__ == "__main__":
    try:
        main()
    except (Bad, KeyError, TypeError, ValueError) as e:
        print("k8s-manifests: %s: %s" % (type(e).__name__, e),
              file=sys.stderr)
        sys.exit(1)
