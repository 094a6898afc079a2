"""etproof.export.state (unit): the initial state is put back after an in-place update, a rebound
buffer and a resized one, and run_fresh gives every call the same starting state."""

import torch
from torch import nn

from etproof.export.state import InitialState, run_fresh


class Writes(nn.Module):
    """forward writes its buffers three ways: in place, by rebinding, and by resizing."""

    def __init__(self):
        super().__init__()
        self.register_buffer("total", torch.full((1, 3), 2.0))
        self.register_buffer("steps", torch.zeros((), dtype=torch.int64))
        self.register_buffer("history", torch.zeros(0, 3))
        self.inner = nn.Module()
        self.inner.register_buffer("scale", torch.ones(3))

    def forward(self, x):
        self.total.add_(x)
        self.steps = self.steps + 1                       # rebound to a new tensor
        self.history = torch.cat([self.history, x])       # grows: another shape
        self.inner.scale.mul_(2)
        return self.total * self.inner.scale


def test_restore_undoes_in_place_rebound_and_resized_writes():
    m = Writes()
    original_steps = m.steps
    state = InitialState(m)
    for _ in range(3):
        m(torch.ones(1, 3))
    assert m.total.tolist() == [[5.0, 5.0, 5.0]] and m.steps.item() == 3 and m.history.shape == (3, 3)
    state.restore()
    assert m.total.tolist() == [[2.0, 2.0, 2.0]]
    assert m.steps is original_steps and m.steps.item() == 0
    assert m.history.shape == (0, 3)
    assert m.inner.scale.tolist() == [1.0, 1.0, 1.0]


def test_run_fresh_starts_every_call_from_the_same_state_and_keeps_it():
    m = Writes()
    x = torch.tensor([[1.0, 2.0, 3.0]])
    outs = run_fresh(m, [(x,), (x,), (x,)])
    assert all(torch.equal(o, outs[0]) for o in outs)
    assert outs[0].tolist() == [[6.0, 8.0, 10.0]]  # (2 + x) * 2, once
    assert m.total.tolist() == [[2.0, 2.0, 2.0]] and m.steps.item() == 0


def test_a_model_without_buffers_is_left_alone():
    m = nn.Linear(3, 2)
    w = m.weight.detach().clone()
    outs = run_fresh(m, [(torch.ones(1, 3),)] * 2)
    assert torch.equal(outs[0], outs[1]) and torch.equal(m.weight, w)
