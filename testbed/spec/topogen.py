"""Generated topologies for scale benchmarks and tests.

`ring_with_chords(n)`: DCs dc0..dc{n-1} on a ring, plus a chord from each of
the first n//2 DCs to the DC opposite it (i -- i + n//2), so paths stay
short as n grows and most DCs have three neighbours.  Nine DCs give 13 links,
the size of NetStorm's WAN; sixteen give 24.  Below six DCs the chords would
repeat ring links, so there are none.
"""

MIN_CHORDS_N = 6


def ring_links(n):
    """[(i, j)] of the ring with chords on n DCs, each link once."""
    if n < 2:
        raise ValueError(f"a ring needs at least 2 DCs, not {n}")
    links = [(i, (i + 1) % n) for i in range(n if n > 2 else 1)]
    if n >= MIN_CHORDS_N:
        links += [(i, i + n // 2) for i in range(n // 2)]
    return links


def ring_with_chords(n, bw="20mbit", delay="10ms", servers=1, workers=1, name=None,
                     experiment=""):
    """topo.yaml text for the ring with chords on n DCs; `experiment` is an
    optional YAML block appended as is."""
    lines = [f"name: {name or f'ring-{n}'}", "datacenters:"]
    lines += [f"  - {{name: dc{i}, servers: {servers}, workers: {workers}}}" for i in range(n)]
    lines.append("wan:")
    lines += [f"  - {{between: [dc{a}, dc{b}], bw: {bw}, delay: {delay}}}"
              for a, b in ring_links(n)]
    return "\n".join(lines) + "\n" + experiment
