"""Streaming measures: contextuality of a corpus too large to store its vectors.

SelfSim, IntraSim and the anisotropy baseline need only running sums per word and layer;
MEV and the static vectors, a seeded sample of each word's occurrences. So a streamed
model's forward pass feeds an `accumulate.StreamingAccumulator` instead of shards, which
writes one state file per layer (`state`); `measure` turns a state file into the tables a
stored layer gives, less the measures that need every vector (`measures.registry.not_streamed`).
"""
