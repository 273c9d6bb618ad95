"""What the console's keys do beyond switching servers, as mixins of the App (their workers live on
the App): ``bench`` (``b``, ``space``, ``B``, the benchmark screen), ``probe`` (the header's
interconnect, ``p``, the predicted L*), ``source`` (``f``, and the demo's wheel fetch)."""
