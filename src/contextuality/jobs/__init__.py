"""How a job or a command runs its work and ends, and what a user watching is told."""
