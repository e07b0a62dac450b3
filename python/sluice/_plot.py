"""Figures of sluice's results, drawn with matplotlib (imported only when a
figure is asked for: ``pip install ./python[plot]``)."""


def profile_figure(profile):
    """A matplotlib ``Figure`` of a :class:`sluice.Profile`: instructions
    against packet length, one point per packet, and the fitted line
    ``alpha + beta * length`` (as ``sluice profile --plot``'s cost plot)."""
    from matplotlib.figure import Figure

    table = profile.packets
    lengths = table.column("len").to_pylist()
    insns = table.column("insns").to_pylist()
    program = profile.report["model"]["program"]
    fig = Figure(figsize=(8.2, 5.0))
    ax = fig.add_subplot()
    ax.scatter(lengths, insns, s=8, alpha=0.5, label="packets")
    lo, hi = min(lengths), max(lengths)
    ax.plot(
        [lo, hi],
        [profile.alpha + profile.beta * lo, profile.alpha + profile.beta * hi],
        color="C3",
        label=f"{profile.alpha:.1f} + {profile.beta:.4f} * length",
    )
    ax.set_xlabel("packet length (bytes)")
    ax.set_ylabel("instructions")
    ax.set_title(f"{program}: cost against packet length")
    ax.legend()
    return fig
