"""Saving a matplotlib figure the way every report does."""


def save(fig, path):
    """Write `fig` to `path` as a PNG and free it; the path."""
    import matplotlib.pyplot as plt
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
