"""King Up!'s facts as data (:class:`tablegym.spec.GameSpec`): sizes, players, search, training."""

from tablegym.spec import Default, GameSpec, SearchSpec, TrainingSpec

SPEC = GameSpec(
    name="kingup",
    title="King Up!",
    player_counts=(3, 4, 5, 6),
    default_players=4,
    heuristic="kingup_env.heuristic:HeuristicKingUp",
    batched_heuristic="kingup_env.heuristic_batch:act_batch",
    search=SearchSpec(
        policy="kingup_env.heuristic:rollout_policy",
        twin="kingup_env.rollout",
        # About 0.2 s of CPU per decision on the engine (docs/results.md).
        simulations=3000,
    ),
    training=TrainingSpec(
        warm_start=Default(500, "as much agreement with the heuristic as fits in about 30 s"),
        warm_epochs=Default(10, "as much agreement with the heuristic as fits in about 30 s"),
        mix=Default(
            "self=0.2,snapshot=0.2,heuristic=0.45,random=0.15",
            "more heuristic seats (0.25 -> 0.45) raised the rate against the heuristic",
        ),
        ent_coef=Default(0.05, "the sweeps' best; at 25 minutes far ahead under the probe"),
        anneal=Default("ent", "part of the sweep's best: the bonus annealed"),
        clip_range=Default(0.1, "part of the sweep's best: 0.05 with clip 0.1"),
        n_epochs=Default(2, "two passes per update; only Up & Down gained from one"),
        probe=Default(
            {
                "warm_start": 500,
                "warm_epochs": 10,
                "ent_coef": 0.05,
                "anneal": "ent",
                "clip_range": 0.1,
                "n_epochs": 2,
            },
            "train.py's defaults from 2026-11-27 on, when the shipped bots were probed",
        ),
    ),
)
