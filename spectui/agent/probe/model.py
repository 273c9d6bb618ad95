"""The model's sizes for the probe: hidden size, layer count and activation dtype from config.json.

The model path of a profile is either a local folder holding ``config.json`` or a Hugging Face
repo id, found in the host's hub cache (``$HF_HUB_CACHE``, ``$HUGGINGFACE_HUB_CACHE``,
``$HF_HOME/hub``, ``$XDG_CACHE_HOME/huggingface/hub`` or ``~/.cache/huggingface/hub``) as
``models--ORG--NAME/snapshots/<revision>/config.json`` (the revision ``refs/main`` names, else
the newest). Multimodal wrappers (Kimi-K2.5, ...) keep the language model's sizes in a nested
``text_config`` (or ``language_config`` / ``llm_config``); those are read when the top level
lacks them.
"""

from __future__ import annotations

import glob
import json
import os

NESTED = ("text_config", "language_config", "llm_config")
DTYPE_BYTES = {"bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "half": 2, "float32": 4, "fp32": 4,
               "float": 4}
DEFAULT_DTYPE = "bfloat16"


class ModelConfigError(Exception):
    """The model's sizes could not be found; the message is one sentence."""


def hub_cache_dirs(env=None):
    env = os.environ if env is None else env
    out = []
    for key in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if env.get(key):
            out.append(env[key])
    if env.get("HF_HOME"):
        out.append(os.path.join(env["HF_HOME"], "hub"))
    if env.get("XDG_CACHE_HOME"):
        out.append(os.path.join(env["XDG_CACHE_HOME"], "huggingface", "hub"))
    out.append(os.path.join("~", ".cache", "huggingface", "hub"))
    seen, dirs = set(), []
    for d in out:
        d = os.path.expanduser(os.path.expandvars(d))
        if d not in seen:
            seen.add(d)
            dirs.append(d)
    return dirs


def find_config(model, env=None):
    """The path of ``config.json`` for ``model`` on this host, or None."""
    path = os.path.expanduser(model)
    if os.path.isfile(path) and os.path.basename(path) == "config.json":
        return path
    if os.path.isdir(path):
        cand = os.path.join(path, "config.json")
        return cand if os.path.isfile(cand) else None
    if model.count("/") != 1 or model.startswith(("/", ".", "~")):
        return None
    repo = "models--" + model.replace("/", "--")
    for cache in hub_cache_dirs(env):
        base = os.path.join(cache, repo)
        if not os.path.isdir(base):
            continue
        try:
            with open(os.path.join(base, "refs", "main")) as fh:
                rev = fh.read().strip()
            cand = os.path.join(base, "snapshots", rev, "config.json")
            if os.path.isfile(cand):
                return cand
        except OSError:
            pass
        found = glob.glob(os.path.join(base, "snapshots", "*", "config.json"))
        if found:
            return max(found, key=os.path.getmtime)
    return None


def sizes_from_config(cfg):
    """``{"hidden_size", "layers", "dtype", "dtype_bytes", "nested"}`` from a parsed config.json."""
    level, nested = cfg, None
    if not ("hidden_size" in cfg and "num_hidden_layers" in cfg):
        for key in NESTED:
            sub = cfg.get(key)
            if isinstance(sub, dict) and "hidden_size" in sub and "num_hidden_layers" in sub:
                level, nested = sub, key
                break
        else:
            raise ModelConfigError("its config.json has no hidden_size and num_hidden_layers "
                                   "(nor under %s)" % " / ".join(NESTED))
    dtype = level.get("torch_dtype") or level.get("dtype") or cfg.get("torch_dtype") or cfg.get("dtype")
    dtype = str(dtype).replace("torch.", "") if dtype else None
    return {"hidden_size": int(level["hidden_size"]), "layers": int(level["num_hidden_layers"]),
            "dtype": dtype if dtype in DTYPE_BYTES else DEFAULT_DTYPE,
            "dtype_bytes": DTYPE_BYTES.get(dtype, DTYPE_BYTES[DEFAULT_DTYPE]),
            "dtype_assumed": dtype not in DTYPE_BYTES, "nested": nested}


def model_sizes(model, hidden_size=None, layers=None, dtype_bytes=None, env=None):
    """The sizes the probe needs, from overrides or the model's config.json on this host."""
    if hidden_size and layers:
        b = int(dtype_bytes or 2)
        return {"model": model, "hidden_size": int(hidden_size), "layers": int(layers),
                "dtype": {2: "bfloat16", 4: "float32"}.get(b, "%d-byte" % b), "dtype_bytes": b,
                "dtype_assumed": dtype_bytes is None, "source": "given (--hidden-size, --layers)"}
    if not model:
        raise ModelConfigError("no model to size the all-reduce messages: give --hidden-size and --layers")
    path = find_config(model, env)
    if path is None:
        raise ModelConfigError("no config.json for %s on this host (not a folder, nor in the Hugging Face "
                               "cache): give --hidden-size and --layers" % model)
    try:
        with open(path, encoding="utf-8") as fh:
            cfg = json.load(fh)
        if not isinstance(cfg, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as exc:
        raise ModelConfigError("%s could not be read (%s): give --hidden-size and --layers" % (path, exc))
    try:
        out = sizes_from_config(cfg)
    except ModelConfigError as exc:
        raise ModelConfigError("%s: %s; give --hidden-size and --layers" % (path, exc))
    except (TypeError, ValueError) as exc:
        raise ModelConfigError("%s has unreadable sizes (%s): give --hidden-size and --layers" % (path, exc))
    if hidden_size:
        out["hidden_size"] = int(hidden_size)
    if layers:
        out["layers"] = int(layers)
    if dtype_bytes:
        out["dtype_bytes"] = int(dtype_bytes)
        out["dtype_assumed"] = False
    out.update(model=model, source=path)
    return out
