"""The simulated SGLang GPU host."""
