"""The WID paper's disorder experiments (Li, Maier, Tufte, Papadimos, Tucker,
SIGMOD 2005, performance study, Experiments 2 and 3): latency against
accuracy of a hopping window aggregate over out-of-order input, when
completeness comes from punctuations or from a fixed slack.

The paper's text was not available to this project, so the set-up is
reconstructed from docs/semantics.md#completeness and the usual definitions; each
module states exactly what it implements:

- `benchmarks.disorder.streams`: the in-order stream, its two disorders
  (bounded, block-sorted), the external punctuations and the micro-batches;
- `benchmarks.disorder.exact`: the exact window results (NumPy and pandas,
  independent of wid);
- `benchmarks.disorder.operator_run`: wid's streaming operator run without
  Spark over in-memory stores, one micro-batch at a time;
- `benchmarks.disorder.measure`: latency and error of one run against the
  exact results.
"""
