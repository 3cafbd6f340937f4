"""Which server holds which parameter keys.

Keys go to servers largest first, each to the server holding the fewest
bytes so far (ties to the lower index), so servers carry similar loads.
"""


def assign(sizes, servers):
    """sizes: {key: bytes} (insertion order kept) -> {key: server index}."""
    if servers < 1:
        raise ValueError("at least one server")
    load = [0] * servers
    owner = {}
    for key in sorted(sizes, key=lambda k: -sizes[k]):
        i = min(range(servers), key=lambda s: (load[s], s))
        owner[key] = i
        load[i] += sizes[key]
    return {k: owner[k] for k in sizes}


def keys_of(owner, server):
    return [k for k, s in owner.items() if s == server]
