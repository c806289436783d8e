"""A served KMA's process: its listeners, what runs beside them, background workers, pacing,
limits, in-process metrics and systemd readiness."""
