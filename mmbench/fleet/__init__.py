"""Many test machines: a PostgreSQL job queue (procrastinate) and the agents that take its jobs."""
