"""A small PPO for CartPole-v1 (the worked example of rlaudit, version 1)."""
