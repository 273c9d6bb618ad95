"""Load on a server: benchmark runs driven by a detached ``runner`` (requests in
``methods``, prompts from ``datasets``), and the demo host's steady ``traffic``; both read
SGLang's streamed answers with ``sse``."""
