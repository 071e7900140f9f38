"""Tests of the shipped, pretrained models (optimizers/pretrained)."""
