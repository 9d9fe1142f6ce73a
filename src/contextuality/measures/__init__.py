"""The measures stage. The paper's equations (`equations`) over a layer's rows
(`contextuality.rows`, `components`, `occurrences`), the registry of every measure of a
layer (`registry`, each a `record.Measure` declared by a module of `instruments`), one
layer measured (`analysis`) with its summaries and intervals (`summary`), isotropy,
positions, ranks, degeneration and the static vectors (`static`). The layer they measure,
as stored or transformed, is the transforms stage's (`contextuality.transforms`); the
paper's published numbers are `contextuality.reference`'s."""
