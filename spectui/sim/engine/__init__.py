"""The serving engine: requests, continuous batching, speculation and its verification.

``request`` (one request), ``scheduler`` (the batching loop in simulated time), ``speculation``
(one decode step: plain or draft + verify), ``ngram`` (trie and BFS draft trees), ``drafter``
(EAGLE-family drafter), ``prefix_cache`` (cached prompt prefixes).
"""
