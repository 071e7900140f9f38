"""The FastAPI app (REST API and web UI) lands with the service issue; it will call only advisor.service.service."""
