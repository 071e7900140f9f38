"""Tests of the command line (advisor/cli): each command group run as a user runs it, as a subprocess."""
