"""Make (once) and print the folder of a tiny Llama model that real SGLang serves on a CPU in seconds.

    PYTHON scripts/tiny_model.py [--seed 0] [--root DIR]

PYTHON is a Python with torch, transformers and tokenizers (the real-SGLang venv's: scripts/real_sglang_venv.sh).
The model: 2 layers, hidden size 128, 4 attention heads and 2 KV heads (about 1.4M parameters), random weights from
``--seed``; a 4096-token byte-level BPE tokenizer trained on this Python's own library sources, with a ChatML chat
template. Nothing is downloaded. It answers with random tokens: it is for serving, timing and parsing, not for text.

The folder is ``ROOT/<digest>`` (ROOT: ``${SPECTUI_TINY_MODELS:-~/.cache/spectui/tiny-models}``), the digest of
everything the model is made from (this recipe, the seed, the training text, the library versions); a folder with its
marker file is reused. Two runs with the same inputs make the same files, byte for byte.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

CONFIG = {
    "hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "vocab_size": 4096, "max_position_embeddings": 4096, "rms_norm_eps": 1e-6,
    "rope_theta": 10000.0, "tie_word_embeddings": False, "torch_dtype": "float32",
}
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
                 "'<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
                 "{% endif %}")
# the training text: modules of this Python's own library (stable for one interpreter; another one makes another
# digest, so another cached folder)
CORPUS_MODULES = ["argparse", "asyncio/base_events", "collections/__init__", "dataclasses", "email/message",
                  "http/server", "json/decoder", "logging/__init__", "pathlib", "subprocess", "textwrap",
                  "typing", "unittest/case", "urllib/parse", "zipfile"]
MARKER = ".spectui-tiny-model"


def corpus() -> list[str]:
    lib = Path(os.__file__).parent
    return [(lib / (m + ".py")).read_text(encoding="utf-8") for m in CORPUS_MODULES]


def digest(seed: int, texts: list[str]) -> str:
    import tokenizers
    import torch
    import transformers

    h = hashlib.sha256(Path(__file__).read_bytes())
    h.update(json.dumps([seed, torch.__version__, transformers.__version__, tokenizers.__version__]).encode())
    for t in texts:
        h.update(t.encode("utf-8"))
    return h.hexdigest()[:16]


def make(folder: Path, seed: int, texts: list[str]) -> None:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=CONFIG["vocab_size"], special_tokens=SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|im_end|>",
                                   pad_token="<|endoftext|>", unk_token=None)
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(folder)

    torch.manual_seed(seed)
    config = LlamaConfig(bos_token_id=fast.convert_tokens_to_ids("<|endoftext|>"),
                         eos_token_id=fast.convert_tokens_to_ids("<|im_end|>"), **CONFIG)
    model = LlamaForCausalLM(config)
    model.save_pretrained(folder, safe_serialization=True)
    GenerationConfig(bos_token_id=config.bos_token_id, eos_token_id=config.eos_token_id).save_pretrained(folder)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--root", default=os.environ.get("SPECTUI_TINY_MODELS",
                                                     os.path.expanduser("~/.cache/spectui/tiny-models")))
    args = ap.parse_args(argv)
    try:
        texts = corpus()
        folder = Path(args.root) / digest(args.seed, texts)
    except (ImportError, OSError) as exc:
        print("tiny_model: %s (run it with the real-SGLang venv's python)" % exc, file=sys.stderr)
        return 1
    if not (folder / MARKER).is_file():
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=folder.parent))
        try:
            make(tmp, args.seed, texts)
            (tmp / MARKER).write_text(json.dumps({"seed": args.seed, "config": CONFIG}) + "\n")
            shutil.rmtree(folder, ignore_errors=True)
            os.replace(tmp, folder)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    print(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
