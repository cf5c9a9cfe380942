"""The built-in subjects: a vectorized numpy arena gridworld, its curricula and reference policies, and PPO."""
