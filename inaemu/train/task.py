"""The training task: scikit-learn's bundled digits (no download), an MLP, seeded shards.

Everything a worker does to its data and its model is a function of (seed, rank, iteration), so
a simulated worker and a worker process on a Mininet host take the same minibatches and start
from the same weights: with the same all-reduce results they follow the same trajectory.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

TEST_FRACTION = 0.2


@dataclass(frozen=True)
class TaskConfig:
    """Model, data and optimizer settings (the same for every worker of a run)."""

    seed: int = 1
    hidden: int = 64           # the MLP's hidden units: 64 -> hidden -> hidden -> 10
    batch: int = 32            # samples per worker per iteration
    lr: float = 0.05
    momentum: float = 0.9

    def __post_init__(self) -> None:
        if not 1 <= self.hidden <= 4096:
            raise ValueError(f"hidden: expected 1..4096 units, got {self.hidden}")
        if not 1 <= self.batch <= 1024:
            raise ValueError(f"batch: expected 1..1024 samples per worker, got {self.batch}")
        if not 0 < self.lr <= 10:
            raise ValueError(f"lr: expected a learning rate in (0, 10], got {self.lr:g}")
        if not 0 <= self.momentum < 1:
            raise ValueError(f"momentum: expected [0, 1), got {self.momentum:g}")


@dataclass(frozen=True)
class Dataset:
    """Standardised digits, split once by the seed: float32 features, int64 labels."""

    train_x: torch.Tensor
    train_y: torch.Tensor
    test_x: torch.Tensor
    test_y: torch.Tensor


def load_digits_split(seed: int) -> Dataset:
    """The 1,797 8x8 digits shipped inside scikit-learn, shuffled by the seed, 80/20 split,
    features scaled by the training set's mean and deviation."""
    from sklearn.datasets import load_digits
    digits = load_digits()
    order = np.random.default_rng([seed, 7]).permutation(len(digits.target))
    x = digits.data[order].astype(np.float64)
    y = digits.target[order].astype(np.int64)
    cut = len(y) - int(round(TEST_FRACTION * len(y)))
    mean, std = x[:cut].mean(axis=0), x[:cut].std(axis=0) + 1e-6
    x = ((x - mean) / std).astype(np.float32)
    return Dataset(torch.from_numpy(x[:cut]), torch.from_numpy(y[:cut]),
                   torch.from_numpy(x[cut:]), torch.from_numpy(y[cut:]))


def build_model(task: TaskConfig) -> nn.Module:
    """The MLP, with weights drawn from the seed (every worker builds the same one)."""
    generator_state = torch.random.get_rng_state()
    torch.manual_seed(task.seed)
    try:
        model = nn.Sequential(nn.Linear(64, task.hidden), nn.ReLU(),
                              nn.Linear(task.hidden, task.hidden), nn.ReLU(),
                              nn.Linear(task.hidden, 10))
    finally:
        torch.random.set_rng_state(generator_state)
    return model


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def make_optimizer(model: nn.Module, task: TaskConfig) -> torch.optim.Optimizer:
    return torch.optim.SGD(model.parameters(), lr=task.lr, momentum=task.momentum)


def shard(data: Dataset, rank: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Rank `rank`'s share of the training set (every n-th sample)."""
    return data.train_x[rank::n], data.train_y[rank::n]


def minibatch(shard_x: torch.Tensor, shard_y: torch.Tensor, task: TaskConfig, rank: int,
              iteration: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The samples rank `rank` trains on at `iteration`: drawn without replacement from its
    shard by a generator seeded with (seed, rank, iteration)."""
    rng = np.random.default_rng([task.seed, rank, iteration])
    size = min(task.batch, len(shard_y))
    index = torch.from_numpy(rng.choice(len(shard_y), size=size, replace=False))
    return shard_x[index], shard_y[index]


def local_loss(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return nn.functional.cross_entropy(model(x), y)


@torch.no_grad()
def evaluate(model: nn.Module, data: Dataset) -> dict[str, float]:
    """Loss on the whole training set, loss and accuracy on the held-out test set."""
    train_loss = nn.functional.cross_entropy(model(data.train_x), data.train_y).item()
    logits = model(data.test_x)
    test_loss = nn.functional.cross_entropy(logits, data.test_y).item()
    accuracy = (logits.argmax(dim=1) == data.test_y).float().mean().item()
    return {"train_loss": train_loss, "test_loss": test_loss, "test_accuracy": accuracy}
