"""The verify-cost probe: all-reduce timings per message size on a real host (``worker``
starts one ``rank`` process per GPU), or the simulator's cost model (``sim``); model sizes
(``model``), GPU links (``topology``) and statistics (``stats``); requests in ``methods``."""
