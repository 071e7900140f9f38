"""Saving and loading a model's blob (optimizers.rl.persistence): a round trip through a file or text gives a
network with identical outputs; the manifest lands beside the file; a damaged file reads as no model."""

import json

import torch

from optimizers.rl import persistence
from optimizers.rl.networks import mlp


def test_a_file_round_trip_gives_identical_outputs(tmp_path):
    torch.manual_seed(0)
    net = mlp(4, 16, 2)
    path = persistence.save({**persistence.weights(net=net), "seed": 7}, tmp_path / "m" / "model.pt", {"seed": 7})
    torch.manual_seed(1)
    other = mlp(4, 16, 2)
    x = torch.randn(8, 4)
    assert not torch.equal(other(x), net(x))
    blob = persistence.load(path)
    persistence.restore(blob, net=other)
    assert torch.equal(other(x), net(x)) and blob["seed"] == 7
    assert json.loads(path.with_suffix(".json").read_text()) == {"seed": 7}


def test_a_text_round_trip_gives_identical_outputs():
    torch.manual_seed(0)
    net, other = mlp(3, 8, 1), mlp(3, 8, 1)
    persistence.restore(persistence.from_text(persistence.to_text(persistence.weights(net=net))), net=other)
    x = torch.randn(5, 3)
    assert torch.equal(other(x), net(x))


def test_a_missing_or_damaged_file_is_no_model(tmp_path):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a model")
    assert persistence.stored(bad) is None and persistence.stored(tmp_path / "none.pt") is None
    persistence.save({"x": torch.ones(2)}, tmp_path / "good.pt")
    assert torch.equal(persistence.stored(tmp_path / "good.pt")["x"], torch.ones(2))
