"""SGLang's source on the host: where an interpreter's SGLang is (``locate``), the tree
and its pages (``tree``, ``paths``), search (``grep`` in a child process: ``grep_process``,
``grep_worker``), go-to-definition (``defs``, ``pyast``) and the algorithms view
(``algorithms``); requests in ``methods``."""
