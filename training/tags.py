"""TensorBoard tag names shared by ``train.py`` (SB3) and ``train_rllib.py`` (RLlib).

Both runs write these tags, so their curves sit side by side in one TensorBoard. The step of
every point is the number of learner samples (``train.py``) or env steps (RLlib) when it was
measured: the evaluation before training is at step 0.

===================================  ==========================================================
tag                                  what
===================================  ==========================================================
``eval/win_rate_vs_{opponent}``      evaluation games: the policy in one seat against
                                     ``random``, ``heuristic`` or ``pool`` (the snapshots) in
                                     every other seat
``selfplay/win_rate_vs_{kind}``      training games: how often the learner's seats ended with
                                     more reward than the seats of ``random``, ``heuristic``,
                                     ``pool`` or ``fixed`` at the same table (ties one half)
``rollout/episode_reward``           the learner's reward per finished training game
``time/samples_per_second``          learner samples per second of wall time (RLlib: the
                                     learning module's samples)
``probe/gain``                       the league's best-response test: its exploiter's win rate
                                     against the frozen policy minus the fair share 1/n
===================================  ==========================================================
"""

from __future__ import annotations

EVAL_WIN_RATE = "eval/win_rate_vs_{}"
SELFPLAY_WIN_RATE = "selfplay/win_rate_vs_{}"
EPISODE_REWARD = "rollout/episode_reward"
SAMPLES_PER_SECOND = "time/samples_per_second"
PROBE_GAIN = "probe/gain"
