"""spectui: a terminal operator console for SGLang speculative decoding."""

__version__ = "0.1.0"
