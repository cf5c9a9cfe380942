"""The built-in subjects' actor-critic: two separate MLPs over a flat observation, a categorical policy.

Module names follow CleanRL's ``ppo.py`` (``actor``, ``critic`` Sequentials), so a reader can hold the two
side by side. Initialization is the PPO scheme of Engstrom et al. 2020 / Huang et al. 2022 ("The 37
implementation details of PPO", detail 2): orthogonal weights with gain sqrt(2) in hidden layers, 0.01 in the
policy head (near-uniform initial policy), 1.0 in the value head, zero biases.
"""

from __future__ import annotations

import math

import torch
from torch import nn

_ACTIVATIONS: dict[str, type[nn.Module]] = {"tanh": nn.Tanh, "relu": nn.ReLU}


def layer_init(layer: nn.Linear, std: float = math.sqrt(2), bias_const: float = 0.0) -> nn.Linear:
    """Orthogonal weights scaled by ``std``, constant bias (in place; returns ``layer``)."""
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias_const)
    return layer


def _mlp(
    in_dim: int,
    out_dim: int,
    hidden_size: int,
    num_layers: int,
    activation: str,
    head_std: float,
    ortho: bool,
) -> nn.Sequential:
    act = _ACTIVATIONS[activation]
    layers: list[nn.Module] = []
    width = in_dim
    for _ in range(num_layers):
        linear = nn.Linear(width, hidden_size)
        layers += [layer_init(linear) if ortho else linear, act()]
        width = hidden_size
    head = nn.Linear(width, out_dim)
    layers.append(layer_init(head, std=head_std) if ortho else head)
    return nn.Sequential(*layers)


class Agent(nn.Module):
    """Separate actor and critic MLPs (no shared trunk), as in CleanRL's ``ppo.py``.

    Args:
        obs_dim: Length of the flat observation vector.
        n_actions: Number of discrete actions.
        hidden_size: Width of every hidden layer.
        num_layers: Hidden layers per network (0 gives linear heads).
        activation: ``tanh`` or ``relu``.
        ortho_init: Use the PPO initialization; False leaves PyTorch's default (Kaiming-uniform) init.
    """

    def __init__(
        self,
        obs_dim: int,
        n_actions: int,
        hidden_size: int = 64,
        num_layers: int = 2,
        activation: str = "tanh",
        ortho_init: bool = True,
    ) -> None:
        super().__init__()
        if activation not in _ACTIVATIONS:
            raise ValueError(
                f"agent.activation must be one of {sorted(_ACTIVATIONS)}, got {activation!r}; fix the config"
            )
        self.obs_dim = int(obs_dim)
        self.n_actions = int(n_actions)
        self.critic = _mlp(obs_dim, 1, hidden_size, num_layers, activation, head_std=1.0, ortho=ortho_init)
        self.actor = _mlp(
            obs_dim, n_actions, hidden_size, num_layers, activation, head_std=0.01, ortho=ortho_init
        )

    def get_value(self, x: torch.Tensor) -> torch.Tensor:
        """State values ``V(x)``: ``x`` (B, obs_dim) float -> (B,)."""
        return self.critic(x).squeeze(-1)

    def get_action_and_value(
        self, x: torch.Tensor, action: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Sample (or score) actions and evaluate the critic.

        Args:
            x: Observations, (B, obs_dim) float32.
            action: Actions to score, (B,) int64; None samples them from the policy (torch's global RNG).

        Returns:
            ``(action (B,) int64, logprob (B,), entropy (B,), value (B,))``.
        """
        logits = self.actor(x)
        # The categorical distribution by hand: torch.distributions' per-call validation and object overhead
        # dominate at rollout batch sizes.
        logp_all = torch.log_softmax(logits, dim=-1)
        if action is None:
            # Gumbel-max trick: argmax(log p + Gumbel noise) is a sample from p
            gumbel = -torch.log(-torch.log(torch.rand_like(logp_all)))
            action = torch.argmax(logp_all + gumbel, dim=-1)
        logprob = logp_all.gather(-1, action.unsqueeze(-1)).squeeze(-1)
        entropy = -(logp_all.exp() * logp_all).sum(-1)
        return action, logprob, entropy, self.get_value(x)
