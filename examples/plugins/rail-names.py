#!/usr/bin/env python3
# rdmadiag: layer=port description="RoCE netdevs follow the site's rail naming scheme" fault=port-link
"""An rdmadiag site plugin (docs/plugins.md): every RoCE port's netdev follows the site's rail
naming scheme, and no two ports claim one rail.

The scheme is a Python regular expression matched against the whole netdev name, from
$RDMADIAG_RAIL_PATTERN or the first line of ${RDMADIAG_RAILS_CONF:-/etc/rdmadiag/rails.conf}
that is not a comment. A named group "rail" is the rail's number: two ports of one rail are a
fault (a cable or a udev rule swapped). For systemd's predictable names (ens1f0np0: slot 1,
function 0, physical port 0; systemd.net-naming-scheme(7)) a scheme might be
    ^ens(?P<rail>[0-9]+)f0np0$
Without a scheme the plugin says so (skipped). It reads only the run's facts on standard input
(schema 1: devices, their ports' link layer and netdevs), no file of the host. Standard library only.
"""
import json
import os
import re
import sys


def emit(findings):
    json.dump({"schema": 1, "findings": findings}, sys.stdout)
    sys.stdout.write("\n")


def scheme():
    p = os.environ.get("RDMADIAG_RAIL_PATTERN", "")
    if p:
        return p, "RDMADIAG_RAIL_PATTERN"
    conf = os.environ.get("RDMADIAG_RAILS_CONF", "/etc/rdmadiag/rails.conf")
    try:
        with open(conf, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith("#"):
                    return line, conf
    except FileNotFoundError:
        pass
    return "", ""


def main():
    facts = json.load(sys.stdin)
    if facts.get("schema") != 1:
        print("rail-names: facts schema %r, want 1" % facts.get("schema"), file=sys.stderr)
        return 2
    pattern, source = scheme()
    if not pattern:
        emit([{"severity": "skipped", "summary": "no rail naming scheme configured: set RDMADIAG_RAIL_PATTERN or write /etc/rdmadiag/rails.conf",
               "remediation": "write the site's netdev naming scheme (a regular expression) in /etc/rdmadiag/rails.conf"}])
        return 0
    try:
        rx = re.compile(pattern)
    except re.error as e:
        print("rail-names: %s: %r is not a regular expression: %s" % (source, pattern, e), file=sys.stderr)
        return 2
    findings, rails = [], {}
    for d in facts.get("devices", []):
        for p in d.get("ports", []):
            if p.get("link_layer") != "Ethernet":
                continue
            name = "%s/%d" % (d["name"], p["port"])
            netdevs = p.get("netdevs") or []
            subject = {"kind": "port", "name": name, "device": d["name"]}
            if d.get("pci"):
                subject["pci"] = d["pci"]
            matched = [(n, rx.fullmatch(n)) for n in netdevs]
            good = [(n, m) for n, m in matched if m]
            ev = [{"name": "netdevs", "observed": " ".join(netdevs) or "none", "expected": pattern, "source": "facts (" + source + ")"}]
            if not good:
                findings.append({"subject": subject, "severity": "warning", "evidence": ev,
                                 "summary": "%s: netdev %s does not follow the site's rail naming" % (name, ", ".join(netdevs) or "missing"),
                                 "remediation": "rename the interface with the site's udev or systemd .link rule, or correct the scheme",
                                 "action": "fix-configuration"})
                continue
            n, m = good[0]
            rail = m.groupdict().get("rail")
            if rail is not None:
                rails.setdefault(rail, []).append((name, n, subject))
            findings.append({"subject": subject, "severity": "ok", "evidence": ev,
                             "summary": "%s: netdev %s follows the rail naming%s" % (name, n, "" if rail is None else " (rail %s)" % rail)})
    for rail, ports in sorted(rails.items()):
        if len(ports) < 2:
            continue
        names = ", ".join("%s (%s)" % (p, n) for p, n, _ in ports)
        for p, n, subject in ports:
            findings.append({"check": "unique", "subject": subject, "severity": "critical",
                             "summary": "%s: rail %s is claimed by %d ports: %s" % (p, rail, len(ports), names),
                             "remediation": "each rail is one port: check the cabling and the naming rule",
                             "action": "fix-configuration"})
    emit(findings)
    return 0


if __name__ == "__main__":
    sys.exit(main())
