"""The one API (``AdvisorService``) under the CLI, REST, web UI and scheduled jobs: runs and their executor,
scheduling, production apply/rollback/watch, auth; ``factory`` assembles it."""
