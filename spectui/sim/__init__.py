"""The simulated GPU host: an SGLang look-alike server over virtual GPUs.

Layout (one job per module):

``vgpu``            virtual GPUs: host.json and per-process claim files under ``<state>/sim/``
``hardware``        the hardware cost model (step times) and its presets
``model/``          the target model: a word tokenizer and a seeded Markov/copy text model
``engine/``         continuous batching, n-gram and drafter speculation, exact verification
``logfmt``          SGLang's log lines, per release era
``metrics``         the ``/metrics`` registry with SGLang's metric names
``faults``          failures on request (OOM at load, crash, hang)
``ranks``           the leader's side of the TP rank child processes
``rank_worker``     one TP rank child process (holds a virtual GPU)
``server/``         ``python -m spectui.sim.server``: flags, start-up, HTTP API
``workload``        prompt generators used by tests and benchmarks

The simulator shares no code with the client: it writes SGLang's formats by itself.
"""
