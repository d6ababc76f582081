"""Training (self-play PPO) and evaluation (tournaments with ratings) for tablegym agents."""
