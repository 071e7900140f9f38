"""Tests of the service (advisor/service): applying, ownership, watches, replicas, reaping."""
