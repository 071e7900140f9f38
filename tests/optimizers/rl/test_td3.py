"""The shared TD3 update (optimizers.rl.td3) on small real networks: Polyak averaging moves the targets by tau, the
actor and the targets move only every policy_delay-th update, the target takes the twin critics' minimum and
smoothing noise stays clipped."""

import copy

import numpy as np
import pytest
import torch

from optimizers.rl import td3 as rl
from optimizers.rl.networks import mlp


def test_polyak_moves_each_target_tau_of_the_way():
    torch.manual_seed(0)
    net, target = mlp(3, 4, 1), mlp(3, 4, 1)
    before = [p.clone() for p in target.parameters()]
    rl.polyak([(net, target)], 0.1)
    for p, pt, b in zip(net.parameters(), target.parameters(), before):
        assert torch.allclose(pt, b + 0.1 * (p - b), atol=1e-7)
        assert not torch.equal(pt, b)
    rl.polyak([(net, target)], 1.0)
    assert all(torch.equal(p, pt) for p, pt in zip(net.parameters(), target.parameters()))


def _agent(seed=0):
    torch.manual_seed(seed)
    actor, critics = mlp(2, 8, 1), torch.nn.ModuleList([mlp(3, 8, 1), mlp(3, 8, 1)])
    return actor, critics, copy.deepcopy(actor), copy.deepcopy(critics)


def _update(options, updates, actor, critics, actor_t, critics_t, opt_a, opt_c, fired):
    s, a, r = torch.randn(16, 2), torch.randn(16, 1), torch.randn(16)

    def actor_loss():
        fired.append(updates + 1)
        return -critics[0](torch.cat([s, actor(s)], -1)).mean()

    return rl.update(options, updates,
                     target=lambda: rl.bellman(r, torch.zeros(16), rl.twin_min(
                         c(torch.cat([s, actor_t(s)], -1)).squeeze(-1) for c in critics_t), options.gamma),
                     values=lambda: [c(torch.cat([s, a], -1)).squeeze(-1) for c in critics], actor_loss=actor_loss,
                     critic_optimizer=opt_c, actor_optimizer=opt_a, pairs=((actor, actor_t), (critics, critics_t)))


def test_the_actor_and_the_targets_move_only_every_policy_delay_updates():
    options = rl.TD3Options(policy_delay=3, tau=0.5, lr_actor=1e-2, lr_critic=1e-2)
    actor, critics, actor_t, critics_t = _agent()
    opt_a, opt_c = torch.optim.Adam(actor.parameters(), 1e-2), torch.optim.Adam(critics.parameters(), 1e-2)
    fired, updates = [], 0
    for _ in range(7):
        actor_before, target_before = copy.deepcopy(actor), copy.deepcopy(actor_t)
        critics_before = copy.deepcopy(critics)
        updates = _update(options, updates, actor, critics, actor_t, critics_t, opt_a, opt_c, fired)
        moved = lambda m, b: any(not torch.equal(p, q) for p, q in zip(m.parameters(), b.parameters()))  # noqa
        assert moved(critics, critics_before)  # the critics step every update
        assert moved(actor, actor_before) == moved(actor_t, target_before) == (updates % 3 == 0)
    assert updates == 7 and fired == [3, 6]


def test_the_target_takes_the_smaller_twin_and_stops_where_done_or_no_action_is_left():
    q = rl.twin_min([torch.tensor([1.0, 5.0, 2.0]), torch.tensor([3.0, 4.0, 2.0])])
    assert q.tolist() == [1.0, 4.0, 2.0]
    y = rl.bellman(torch.ones(3), torch.tensor([0.0, 1.0, 0.0]), q, 0.5, alive=torch.tensor([1.0, 1.0, 0.0]))
    assert y.tolist() == [1.5, 1.0, 1.0]


@pytest.mark.parametrize("numpy_rng", [False, True])
def test_smoothing_noise_is_clipped_and_repeats_from_its_seed(numpy_rng):
    options = rl.TD3Options(target_noise=1.0, noise_clip=0.3)

    def draw():
        torch.manual_seed(1)
        return rl.smoothing_noise((400,), options, "cpu", np.random.default_rng(1) if numpy_rng else None)

    noise = draw()
    assert noise.abs().max().item() == pytest.approx(0.3) and noise.std().item() > 0.1
    assert torch.equal(noise, draw())


def test_an_agents_options_extend_the_shared_ones_and_keep_their_own_defaults():
    from optimizers.indexes.td3 import IA2Options
    from optimizers.learned_index.litune_agent import AgentOptions

    for own, shared in ((IA2Options(), {"gamma": 0.9, "tau": 0.01, "buffer": 8000, "reward_clip": 20.0}),
                        (AgentOptions(), {"gamma": 0.3, "tau": 0.02, "buffer": 4000, "reward_clip": 3.0})):
        assert isinstance(own, rl.TD3Options)
        assert {k: getattr(own, k) for k in shared} == shared
