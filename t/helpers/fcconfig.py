#!/usr/bin/env python3
"""fcconfig.py -- checks a firecracker --config-file against firecracker's
documented schema, and what intutic puts in it.

  fcconfig.py FILE [--kernel PATH] [--initrd PATH] [--rundir DIR]
                   [--mem MIB] [--vcpus N]

The schema is that of firecracker's API description
(src/firecracker/swagger/firecracker.yaml, definitions FullVmConfiguration,
BootSource, Drive, NetworkInterface, MachineConfiguration), written out
here for the four sections intutic uses: the required properties, the type
of each property, the enumerations and ranges, and no property the schema
does not name.  Prints "ok" and exits 0, or one line per fault and exits 1.
Standard library only.
"""

import argparse
import json
import re
import sys

STR, BOOL, INT, OBJ = "string", "boolean", "integer", "object"

# definition: (required, {property: type or (type, extra)})
SCHEMA = {
    "BootSource": (
        ["kernel_image_path"],
        {"boot_args": STR, "initrd_path": STR, "kernel_image_path": STR},
    ),
    "Drive": (
        ["drive_id", "is_root_device"],
        {
            "drive_id": STR,
            "partuuid": STR,
            "is_root_device": BOOL,
            "cache_type": (STR, {"enum": ["Unsafe", "Writeback"]}),
            "is_read_only": BOOL,
            "path_on_host": STR,
            "rate_limiter": OBJ,
            "io_engine": (STR, {"enum": ["Sync", "Async"]}),
            "socket": STR,
        },
    ),
    "NetworkInterface": (
        ["host_dev_name", "iface_id"],
        {
            "guest_mac": STR,
            "host_dev_name": STR,
            "iface_id": STR,
            "mtu": (INT, {"min": 68, "max": 65535}),
            "rx_rate_limiter": OBJ,
            "tx_rate_limiter": OBJ,
        },
    ),
    "MachineConfiguration": (
        ["mem_size_mib", "vcpu_count"],
        {
            "cpu_template": (STR, {"enum": ["C3", "T2", "T2S", "T2CL", "T2A",
                                            "V1N1", "None"]}),
            "smt": BOOL,
            "mem_size_mib": INT,
            "track_dirty_pages": BOOL,
            "vcpu_count": (INT, {"min": 1, "max": 32}),
            "huge_pages": (STR, {"enum": ["None", "Transparent", "2M"]}),
        },
    ),
}

# FullVmConfiguration: the sections, and the definition of each
TOP = {
    "boot-source": ("BootSource", False),
    "drives": ("Drive", True),
    "network-interfaces": ("NetworkInterface", True),
    "machine-config": ("MachineConfiguration", False),
}
TOP_OTHER = {"balloon", "cpu-config", "logger", "metrics", "memory-hotplug",
             "mmds-config", "pmem", "vsock", "entropy"}


def type_ok(value, t):
    if t == STR:
        return isinstance(value, str)
    if t == BOOL:
        return isinstance(value, bool)
    if t == INT:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, dict)


def check_object(where, obj, name, faults):
    required, props = SCHEMA[name]
    if not isinstance(obj, dict):
        faults.append("%s: not an object (%s)" % (where, name))
        return
    for r in required:
        if r not in obj:
            faults.append("%s: %s is required (%s)" % (where, r, name))
    for k, v in obj.items():
        if k not in props:
            faults.append("%s: %s is not a property of %s" % (where, k, name))
            continue
        spec = props[k]
        t, extra = (spec, {}) if isinstance(spec, str) else spec
        if not type_ok(v, t):
            faults.append("%s: %s must be a %s" % (where, k, t))
            continue
        if "enum" in extra and v not in extra["enum"]:
            faults.append("%s: %s must be one of %s" % (where, k, extra["enum"]))
        if "min" in extra and v < extra["min"]:
            faults.append("%s: %s must be at least %d" % (where, k, extra["min"]))
        if "max" in extra and v > extra["max"]:
            faults.append("%s: %s must be at most %d" % (where, k, extra["max"]))
    if name == "MachineConfiguration":
        n = obj.get("vcpu_count")
        if type_ok(n, INT) and n > 1 and n % 2 != 0:
            faults.append("%s: vcpu_count must be 1 or an even number" % where)


def check(cfg, faults):
    if not isinstance(cfg, dict):
        faults.append("the configuration is not a JSON object")
        return
    for k in cfg:
        if k not in TOP and k not in TOP_OTHER:
            faults.append("%s is not a section of FullVmConfiguration" % k)
    for k, (name, is_list) in TOP.items():
        if k not in cfg:
            faults.append("%s: missing (intutic always writes it)" % k)
            continue
        if is_list:
            if not isinstance(cfg[k], list):
                faults.append("%s: must be an array" % k)
                continue
            for i, item in enumerate(cfg[k]):
                check_object("%s[%d]" % (k, i), item, name, faults)
        else:
            check_object(k, cfg[k], name, faults)
    drives = cfg.get("drives") if isinstance(cfg.get("drives"), list) else []
    roots = [d for d in drives if isinstance(d, dict) and d.get("is_root_device")]
    if len(roots) != 1:
        faults.append("drives: exactly one root device, not %d" % len(roots))
    ids = [d.get("drive_id") for d in drives if isinstance(d, dict)]
    if len(ids) != len(set(ids)):
        faults.append("drives: drive_id values repeat")


def check_intutic(cfg, a, faults):
    """What intutic's launcher must have put there."""
    boot = cfg.get("boot-source", {})
    args = boot.get("boot_args", "")
    if a.kernel and boot.get("kernel_image_path") != a.kernel:
        faults.append("boot-source: kernel_image_path is not %s" % a.kernel)
    if a.initrd and boot.get("initrd_path") != a.initrd:
        faults.append("boot-source: initrd_path is not %s" % a.initrd)
    if not re.search(r"(^| )ip=(\d+\.){3}\d+::(\d+\.){3}\d+:255\.255\.255\.252::eth0:off( |$)",
                     args):
        faults.append("boot-source: boot_args has no ip=GUEST::HOST:/30::eth0:off")
    if "init=/usr/sbin/intutic-guest-init" not in args.split():
        faults.append("boot-source: boot_args does not start the guest init")
    drives = cfg.get("drives", [])
    if len(drives) != 2:
        faults.append("drives: the root and the run's configuration disk, not %d"
                      % len(drives))
    for d in drives:
        p = d.get("path_on_host", "")
        if a.rundir and not p.startswith(a.rundir + "/run-"):
            faults.append("drives: %s is not in the run directory" % p)
        if not d.get("is_root_device") and d.get("is_read_only") is not True:
            faults.append("drives: the configuration disk must be read-only")
    nics = cfg.get("network-interfaces", [])
    if len(nics) != 1 or not re.match(r"^intvm[0-9a-f]{8}$",
                                      nics[0].get("host_dev_name", "")):
        faults.append("network-interfaces: one, on an intvm tap")
    elif not re.match(r"^02(:[0-9a-f]{2}){5}$", nics[0].get("guest_mac", "")):
        faults.append("network-interfaces: guest_mac is not a local unicast MAC")
    mc = cfg.get("machine-config", {})
    if a.mem is not None and mc.get("mem_size_mib") != a.mem:
        faults.append("machine-config: mem_size_mib is not %d" % a.mem)
    if a.vcpus is not None and mc.get("vcpu_count") != a.vcpus:
        faults.append("machine-config: vcpu_count is not %d" % a.vcpus)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--kernel")
    ap.add_argument("--initrd")
    ap.add_argument("--rundir")
    ap.add_argument("--mem", type=int)
    ap.add_argument("--vcpus", type=int)
    a = ap.parse_args()
    faults = []
    try:
        with open(a.file) as f:
            cfg = json.load(f)
    except (OSError, ValueError) as e:
        print("%s: %s" % (a.file, e))
        return 1
    check(cfg, faults)
    if not faults:
        check_intutic(cfg, a, faults)
    for f in faults:
        print(f)
    if faults:
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
