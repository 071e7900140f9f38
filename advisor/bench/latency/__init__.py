"""``advisor bench latency``: seconds until a shadow answers, by how it is made (``bench``)."""
