"""REST routers, one per resource, all under /api."""
