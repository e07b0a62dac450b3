"""The text reports of sluice-cluster: a merged run's report laid out as
``sluice run`` prints it (crates/cli/src/cmd/run/report.rs), then what the
merge did; a filter's and flow accounting's as ``sluice filter`` and
``sluice monitor flows`` print theirs."""


def _pairs(d, sep=": "):
    return "  ".join(f"{k}{sep}{n}" for k, n in d.items())


def run_text(r):
    """The text of a merged run's report ``r`` (``RunResult.report``)."""
    out = [f"{r['program']} ({r['section']}) of {r['object']}", f"source        {r['source']}"]
    if r.get("source_note"):
        out.append(f"              {r['source_note']}")
    checks = "no per-access checks (verified)" if r.get("checks") == "verified" else "checks on every access"
    out.append(f"engine        {r['engine']}, {checks}")
    threads = r.get("threads", 1)
    out.append(
        f"packets       {r['packets']} in {r['seconds']:.3f} s ({r['packets_per_second']:.0f} packets/s)"
        f" on {threads} thread{'' if threads == 1 else 's'}"
    )
    total = max(r["packets"], 1)
    out.append("verdicts      " + "  ".join(f"{k} {n} ({n * 100 / total:.1f}%)" for k, n in r["verdicts"].items()))
    for key, label in (("redirects", "redirects     "), ("clones", "clones        ")):
        if r.get(key):
            out.append(label + _pairs(r[key]))
    p = r["insns_per_packet"]
    out.append(f"insns/packet  mean {p['mean']:.1f}  p50 {p['p50']}  p99 {p['p99']}  max {p['max']}")
    out.append(f"helpers/pkt   {r['helper_calls_per_packet']:.2f}")
    if r.get("link_types"):
        out.append(f"link types    {_pairs(r['link_types'])}")
    if r.get("skipped"):
        out.append(f"skipped       {_pairs(r['skipped'])}")
    if r.get("errors"):
        out.append(f"errors        {r['errors']} packets stopped with an error:")
        for e in r.get("first_errors", []):
            out.append(f"  packet {e['packet']}: {e['message']}")
            if e.get("line"):
                out.append(f"    at {e['line']}")
    out.append("maps")
    for m in r.get("maps", []):
        out.append(
            f"  {m['name']} ({m['type']}, key {m['key_size']} B, value {m['value_size']} B,"
            f" {m['len']} of {m['max_entries']} entries)"
        )
        for e in m.get("entries", []):
            cpus = e.get("cpus", [])
            if e.get("summed"):
                out.append(f"    {e['key']} => {e['value']}  (per CPU: {' | '.join(cpus)})")
            elif len(cpus) > 1:
                out.append(f"    {e['key']} => {' | '.join(cpus)}")
            else:
                out.append(f"    {e['key']} => {e['value']}")
        notes = []
        zero, more = m.get("zero_entries", 0), m.get("more", 0)
        if zero and (m.get("entries") or zero < m["len"]):
            notes.append(f"{zero} all-zero entries not shown")
        elif zero:
            notes.append("all zero")
        if more:
            notes.append(f"{more} more entries")
        if notes:
            out.append(f"    ({', '.join(notes)})")
    merged = r.get("merged")
    if merged is not None:
        out.append("merged")
        out.extend(_merged(merged))
    return "\n".join(out) + "\n"


def _merged(merged):
    """The ``merged`` part's lines: the ranges, the maps' policies, the maps kept per range."""
    lines = [
        f"  {merged.get('shards', 0)} ranges merged, {merged.get('redone', 0)} of them read again"
        " from a proven position"
    ]
    policies = merged.get("map_policies", {})
    if policies:
        lines.append("  map policies  " + "  ".join(f"{m}: {p}" for m, p in policies.items()))
    for name, dumps in merged.get("kept", {}).items():
        lines.append(f"  {name} kept per range:")
        for i, d in enumerate(dumps):
            entries = ", ".join(f"{e['key']} => {e['value']}" for e in d.get("entries", []))
            lines.append(f"    range {i}: {d.get('len', 0)} entries" + (f": {entries}" if entries else ""))
    return lines


def filter_text(r):
    """The text of a merged filter report, as ``sluice filter -r`` says it."""
    return f"{r['read']} packets read, {r['matched']} matched `{r['expression']}` ({r['engine']} engine)\n"


def flows_text(summary, records, top=20):
    """The text of merged flow accounting, as ``sluice monitor flows``
    says it: the summary line, then the flows with the most bytes."""
    s = summary
    out = [
        f"{s['packets']} packets, {s['accounted']} with IP in {s['flows']} flows ({s['idle_timeout']} idle,"
        f" {s['active_timeout']} active timeout, {s['end_of_flow']} FIN/RST, {s['forced_end']} at the end,"
        f" {s['evicted']} evicted)"
    ]
    if records:
        out.append(
            f"{'source':>39} {'port':>6} {'destination':>40} {'port':>6} {'proto':>5} {'packets':>9} {'bytes':>12}"
        )
        for f in sorted(records, key=lambda f: -f.get("octetDeltaCount", 0))[:top]:
            src = f.get("sourceIPv4Address") or f.get("sourceIPv6Address")
            dst = f.get("destinationIPv4Address") or f.get("destinationIPv6Address")
            out.append(
                f"{src:>39} {f.get('sourceTransportPort', 0):>6} {dst:>40} {f.get('destinationTransportPort', 0):>6}"
                f" {f.get('protocolIdentifier', 0):>5} {f.get('packetDeltaCount', 0):>9} {f.get('octetDeltaCount', 0):>12}"
            )
    return "\n".join(out) + "\n"
