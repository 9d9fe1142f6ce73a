"""One forward pass of a model over the corpus, into whatever sink it is handed.

`units` turns sentences into the model's inputs, each token marked with the row it
serves, and checks them against the occurrence index; `partitions` cuts the corpus into
segments and parts (`partitions.plan_extraction`); `forward` runs one padded batch and
pools its subwords; `run` loops over the segments and hands each to the sink.
"""
