"""KdK's facts as data (:class:`tablegym.spec.GameSpec`): sizes, players, search, training."""

from tablegym.spec import Default, GameSpec, SearchSpec, TrainingSpec

SPEC = GameSpec(
    name="kdk",
    title="KdK – Kampf der Könige",
    player_counts=(2, 3, 4, 5),
    default_players=3,
    heuristic="kdk_env.heuristic:HeuristicKdK",
    batched_heuristic="kdk_env.heuristic_batch:act_batch",
    search=SearchSpec(
        policy="kdk_env.heuristic:rollout_policy",
        twin="kdk_env.rollout",
        # About 0.2 s of CPU per decision on the engine; the race often stops before it.
        simulations=2000,
        # Even biased, the tree's means stay too noisy to improve on the policy: the search
        # races the moves at the root on shared determinisations instead.
        root="race",
        # A decision often has a dozen moves whose rollout values differ by less than their
        # noise: unbiased, the search spread its visits evenly and played near-random
        # announcements; with bias 2 it departs from the policy only where the rollouts
        # clearly disagree.
        bias=2.0,
    ),
    training=TrainingSpec(
        warm_start=Default(500, "150 games left the policy at 0.04 against the heuristic"),
        warm_epochs=Default(5, "half the time of 10 epochs on 500 games"),
        mix=Default(
            "self=0.2,snapshot=0.2,heuristic=0.5,random=0.1",
            "more heuristic seats (0.3 -> 0.5) raised the rate against the heuristic",
        ),
        ent_coef=Default(0.01, "the sweeps' best on the heuristic and the probe (6 and 25 min)"),
        anneal=Default("", "the sweep's best: the bonus kept, not annealed"),
        clip_range=Default(0.1, "the sweep's best: 0.01 with clip 0.1"),
        n_epochs=Default(2, "two passes per update; only Up & Down gained from one"),
        probe=Default(
            {
                "warm_start": 500,
                "warm_epochs": 5,
                "ent_coef": 0.01,
                "anneal": "",
                "clip_range": 0.1,
                "n_epochs": 2,
            },
            "train.py's defaults from 2026-11-27 on, when the shipped bots were probed",
        ),
    ),
)
