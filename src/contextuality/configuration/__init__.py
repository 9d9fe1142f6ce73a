"""A study's configuration: the schema of its settings, the bundled workflow and configs,
and the seeded random streams its settings name."""
