"""Where GPU samples come from: NVML, ``nvidia-smi`` or the simulator's GPUs (``select``
picks one), the per-GPU sample shape (``base``), who each GPU process is (``procinfo``),
and the ``gpu`` event stream (``stream``, methods in ``methods``)."""
