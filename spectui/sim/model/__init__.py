"""The simulated target model: a word-level tokenizer and a seeded text model.

``corpus.txt`` holds chapters I-V of Lewis Carroll's *Alice's Adventures in Wonderland*
(1865, public domain; Project Gutenberg eBook #11), the source of the model's statistics.
"""

from spectui.sim.model.markov import ContextState, TargetModel, get_model
from spectui.sim.model.tokenizer import EOS_ID, Vocab

__all__ = ["ContextState", "EOS_ID", "TargetModel", "Vocab", "get_model"]
