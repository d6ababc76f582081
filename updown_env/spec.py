"""Up & Down's facts as data (:class:`tablegym.spec.GameSpec`): sizes, players, search, training."""

from tablegym.spec import Default, GameSpec, SearchSpec, TrainingSpec

SPEC = GameSpec(
    name="updown",
    title="Up & Down",
    player_counts=(2, 3, 4),
    default_players=2,
    heuristic="updown_env.heuristic:HeuristicUpDown",
    batched_heuristic="updown_env.heuristic_batch:act_batch",
    features="updown_env.features",
    search=SearchSpec(
        policy="updown_env.heuristic:rollout_policy",
        twin="updown_env.rollout",
        # About 0.2 s of CPU per decision on the engine, rollouts to the end (docs/results.md).
        simulations=3000,
        # Scores change after every trick, and a one-trick horizon spends trumps and queens at
        # once: "end" won 0.52 of the games against three heuristics, "score" 0.30.
        cutoff="end",
    ),
    training=TrainingSpec(
        warm_start=Default(4000, "600 games left the policy at 0.26 against the heuristic"),
        warm_epochs=Default(8, "10 epochs took longer for agreement 0.84 against 0.82"),
        mix=Default(
            "self=0.15,snapshot=0.15,heuristic=0.7",
            "more heuristic seats (0.45 -> 0.7) raised the rate against the heuristic",
        ),
        ent_coef=Default(0.05, "two seeds at 25 min: harder to exploit, level vs the heuristic"),
        anneal=Default("ent", "the sweep's choice: the bonus annealed"),
        clip_range=Default(0.1, "the small clip; the sweep found no better (0.05-0.2)"),
        n_epochs=Default(1, "40% more samples, and a stronger bot than with two epochs"),
        probe=Default(
            {
                "warm_start": 4000,
                "warm_epochs": 8,
                "ent_coef": 0.005,
                "anneal": "ent",
                "clip_range": 0.1,
                "n_epochs": 1,
            },
            "train.py's defaults from 2026-11-27 on, when the shipped bots were probed",
        ),
    ),
)
