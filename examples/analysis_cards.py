"""Kernel discovery's Ax analysis cards, and a PNG of the scores plot.

Runs the README's example problem for a few rounds (or reads a run saved with
``Client.save_to_json_file``), computes ``kernel_discovery_analyses()`` with Ax's
``Client.compute_analyses`` and prints the cards. The scores plot is a plotly figure;
plotly writes PNG only through kaleido, which needs a Chrome browser, so the PNG is drawn
with matplotlib from the card's own data (``card.df``)::

    python examples/analysis_cards.py --png docs/img/kd_scores.png
    python examples/analysis_cards.py --run run.json --png scores.png
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from ax.api import Client
from ax.api.configs import RangeParameterConfig
from ax.utils.common.logger import set_ax_logger_levels

from ax_kernel_discovery import kernel_discovery_analyses, kernel_discovery_generation_strategy

D = 20


def my_function(params: dict[str, float]) -> float:
    """The README's stand-in black box: depends on 3 of the 20 inputs."""
    x = np.array([params[f"x{i}"] for i in range(D)])
    return float(np.sum((x[:3] - 0.3) ** 2) + 0.01 * np.sum(x[3:]))


def run(rounds: int) -> Client:
    """The README's run, with ``rounds`` rounds of kernel discovery."""
    client = Client(random_seed=0)
    client.configure_experiment(
        parameters=[
            RangeParameterConfig(name=f"x{i}", parameter_type="float", bounds=(0.0, 1.0))
            for i in range(D)
        ]
    )
    client.configure_optimization(objective="-loss")
    client.set_generation_strategy(
        kernel_discovery_generation_strategy(num_sobol=8, num_restarts=2, raw_samples=128)
    )
    for _ in range(2 + rounds):
        for index, params in client.get_next_trials(max_trials=4).items():
            client.complete_trial(index, raw_data={"loss": my_function(params)})
    return client


def scores_png(df: Any, path: str | Path, title: str) -> Path:
    """The scores plot of :class:`~ax_kernel_discovery.cards.HeldOutScoresPlot` from its
    DataFrame, with matplotlib (one line per kernel, the round's choice starred)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.0, 4.4), dpi=120)
    chosen_ever = set(df[df["chosen"]]["kernel"])
    others = False
    for name, part in df.groupby("kernel", sort=False):
        if name not in chosen_ever:  # kernels never chosen: thin grey lines, one legend entry
            ax.plot(
                part["round"],
                part["score"],
                "-o",
                ms=2,
                lw=0.7,
                color="0.75",
                label=None if others else "kernels never chosen",
                zorder=1,
            )
            others = True
            continue
        (line,) = ax.plot(part["round"], part["score"], "-o", ms=3, lw=1.4, label=name, zorder=2)
        chosen = part[part["chosen"]]
        ax.plot(
            chosen["round"],
            chosen["score"],
            "*",
            ms=14,
            color=line.get_color(),
            mec="black",
            zorder=3,
        )
    ax.set_xlabel("round of kernel discovery")
    ax.set_ylabel("held-out score (lower is better)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="chosen kernels")
    fig.text(0.01, 0.01, "star: the kernel the round chose", fontsize=7, color="0.4")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", default=None, help="a Client saved with save_to_json_file")
    parser.add_argument("--rounds", type=int, default=8, help="rounds of a new run (default 8)")
    parser.add_argument("--png", default=None, help="write the scores plot as this PNG")
    parser.add_argument("--save", default=None, help="save the new run with save_to_json_file")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    set_ax_logger_levels(logging.WARNING)
    client = Client.load_from_json_file(args.run) if args.run else run(args.rounds)
    if args.save:
        client.save_to_json_file(args.save)
    cards = client.compute_analyses(kernel_discovery_analyses(), display=False)
    for card in cards:
        print(f"== {card.title}\n{card.subtitle}\n{card.df.head(8).to_string()}\n")
    if args.png:
        plot = cards[-1]
        print("wrote", scores_png(plot.df, args.png, plot.title))


if __name__ == "__main__":
    main()
