"""Benchmark prompts generated locally from a seed: no download, identical for every profile.

Two datasets:

* ``random``: words drawn uniformly from a built-in list of common English words, with no
  structure between them (the spirit of ``sglang.benchmark.serving --dataset-name random``,
  which draws random token ids). Nothing in such a prompt helps a drafter or an n-gram trie.
* ``reasoning``: text shaped like a model's step-by-step reasoning: a small word problem,
  then "Let me think step by step", intermediate results, checks ("Wait, let me check"),
  restatements and a conclusion, with numbers and names drawn from the seed.

Lengths are counted in *words* (a word, a number or a punctuation mark each count one):
prompt token counts are therefore approximate. The simulated host tokenizes by words, so
there they match; a real tokenizer gives somewhat more tokens per word. Each request's
actual ``prompt_tokens`` is recorded from the server's answer.

Same ``(dataset, seed, count, input_len)`` -> the same prompts, on any machine and Python.

Real prompts, read with SGLang's rules (``spectui/agent/bench/datasets.py`` has them, with the
lines of SGLang's loaders they follow):

* ``mt-bench``: the 80 MT-Bench questions shipped with spectui (``spectui/data/prompts``, Apache
  2.0, see its SOURCE.txt), the first turn of each; sampled here and sent with the run.
* ``sharegpt`` and ``custom``: a file on the GPU host (``dataset-path``) in the format of
  ``sglang.benchmark.serving --dataset-name sharegpt`` or ``custom``; read and sampled there by the
  benchmark runner, which records the file's sha256. ``mt-bench`` with a ``dataset-path`` reads
  the host's own ``question.jsonl`` the same way.

For these ``input_len`` is the most words a prompt may have: longer ones are passed over, as
SGLang passes over conversations beyond ``--sharegpt-context-len``.
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

from spectui.agent.bench.datasets import DatasetFileError, prompts_from_text, prompts_sha256, sample_prompts

GENERATED = ("random", "reasoning")
SHIPPED = {"mt-bench": "mt_bench_question.jsonl"}  # name -> file in spectui/data/prompts
FILE_FORMATS = ("mt-bench", "sharegpt", "custom")  # read from a dataset-path on the host
DATASETS = GENERATED + ("mt-bench", "sharegpt", "custom")

_WORD_RE = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z]+)*|[^\sA-Za-z0-9]")

COMMON_WORDS = (
    "time year people way day man thing woman life child world school state family student group "
    "country problem hand part place case week company system program question work government "
    "number night point home water room mother area money story fact month lot right study book "
    "eye job word business issue side kind head house service friend father power hour game line "
    "end member law car city community name president team minute idea kid body information back "
    "parent face others level office door health person art war history party result change "
    "morning reason research girl guy moment air teacher force education foot boy age policy "
    "music market sense nation plan college interest death experience effect use class control "
    "care field development role effort rate heart drug show leader light voice wife police mind "
    "price report decision son view relationship town road arm difference value building action "
    "model season society tax director position player record paper space ground form event "
    "official matter center couple site project activity star table need court oil situation cost "
    "industry figure street image phone data picture practice piece land product doctor wall "
    "patient worker news test movie north love support technology step baby computer type "
    "attention film tree source organization hair window evidence population truth song "
    "be have do say go can get would make know will think take see come could want look use find "
    "give tell work may should call try ask need feel become leave put mean keep let begin seem "
    "help talk turn start might show hear play run move like live believe hold bring happen must "
    "write provide sit stand lose pay meet include continue set learn lead understand watch follow "
    "stop create speak read allow add spend grow open walk win offer remember consider appear buy "
    "wait serve die send expect build stay fall cut reach kill remain suggest raise pass sell "
    "require report decide pull other new good high old great big small large national young "
    "different long little important political bad white real best right social only public sure "
    "low early able human local late hard major better economic strong possible whole free "
    "military true federal international full special easy clear recent certain personal open red "
    "difficult available likely short single medical current wrong private past foreign fine "
    "common poor natural significant similar hot dead central happy serious ready simple left "
    "physical general environmental financial blue democratic dark various entire close legal "
    "religious cold final main green nice huge popular traditional cultural quickly slowly "
    "always never often still already almost perhaps together however maybe quite rather"
).split()

_NAMES = ("Alice", "Ben", "Clara", "David", "Emma", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kira", "Leo",
          "Maya", "Noah", "Olga", "Priya", "Quinn", "Rosa", "Sam", "Tara")
_ITEMS = ("apples", "books", "marbles", "coins", "stamps", "pencils", "cookies", "cards", "shells", "bottles",
          "tickets", "boxes", "flowers", "eggs", "chairs")
_PLACES = ("the market", "the library", "the school", "the garden", "the shop", "the station", "the farm",
           "the harbour")

_OPENERS = (
    "Let me think about this step by step, and not rush it.",
    "Okay, so I need to work out how many there are at the end, and I want to do it one step at a time.",
    "Let me read the question again and break it into smaller parts that are easy to work with.",
    "Alright, this is a question about counting, so I will go through it in order and keep the numbers straight.",
)
_CHECKS = (
    "Wait, let me check that again, because it is easy to make a mistake with the numbers here.",
    "Hmm, I am not quite sure about that, so let me go back and look at this step once more.",
    "Actually, let me make sure of that before I go on, just in case I got it wrong the first time.",
    "But is that really right? I should look at it again in a different way.",
)
_LINKS = (
    "Good, that is the same as what I had before, so I think it is right.",
    "So far, so good, and now I can go on to the next part of the question.",
    "That makes sense, and it is what I would expect from the way the question is put.",
    "Now I have to keep that number in mind, because I will need it again in a moment.",
    "It was a little confusing at first, but I think it is clear now.",
)


def _words(text: str) -> list[str]:
    return _WORD_RE.findall(text)


def word_count(text: str) -> int:
    """How many words (and punctuation marks) ``text`` has: the unit of ``input_len``."""
    return len(_words(text))


def _fit(parts: list[str], n_words: int) -> str:
    """Join whole sentences until ``n_words`` is reached, then cut the last one to fit."""
    out: list[str] = []
    count = 0
    for sentence in parts:
        w = word_count(sentence)
        if count + w <= n_words:
            out.append(sentence)
            count += w
            continue
        # cut the sentence word by word (keeping punctuation attached to its word)
        tokens = re.findall(r"\S+", sentence)
        cut = []
        for tok in tokens:
            tw = word_count(tok)
            if count + tw > n_words:
                break
            cut.append(tok)
            count += tw
        if cut:
            out.append(" ".join(cut))
        break
    return " ".join(out)


def random_prompt(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choice(COMMON_WORDS) for _ in range(max(1, n_words)))


def _problem(rng: random.Random) -> list[str]:
    """A small word problem and a verbose, self-checking walk through it (as reasoning models write)."""
    name, other = rng.sample(_NAMES, 2)
    item = rng.choice(_ITEMS)
    place = rng.choice(_PLACES)
    boxes = rng.randint(3, 24)
    per_box = rng.randint(4, 15)
    given = rng.randint(1, boxes * per_box // 3)
    bought = rng.randint(2, 30)
    total = boxes * per_box
    kept = total - given
    left = kept + bought
    tens, units = divmod(per_box, 10)
    question = [
        f"Question: {name} has {boxes} bags of {item}, and each bag holds {per_box} {item}.",
        f"{name} gives {given} of the {item} to {other} at {place}, and then buys {bought} more.",
        f"How many {item} does {name} have now?",
    ]
    steps = [
        rng.choice(_OPENERS),
        f"The first thing I need to know is how many {item} there are in all of the bags together.",
        f"There are {boxes} bags, and each one of them holds {per_box} {item}, so I have to multiply.",
        f"{boxes} times {per_box} is {total}, so {name} starts with {total} {item}.",
        rng.choice(_CHECKS),
        (f"If I split it up, {boxes} times {tens * 10} is {boxes * tens * 10}, and {boxes} times {units} is "
         f"{boxes * units}, and when I put them together I get {total} again." if tens and units else
         f"I can count it another way: {per_box} and {per_box} and so on, {boxes} times, and that is {total} too."),
        rng.choice(_LINKS),
        f"Now, the next part of the question says that {name} gives {given} of the {item} to {other}.",
        f"That means I have to take {given} away from the {total} {item} that {name} had at the start.",
        f"{total} minus {given} is {kept}, so after that {name} has {kept} {item} left.",
        f"Then {name} goes to {place} and buys {bought} more, so now I have to add them on.",
        f"{kept} plus {bought} is {left}.",
        rng.choice(_CHECKS),
        (f"So it was {total} at the start, then {given} were given away, which left {kept}, and then "
         f"{bought} more were bought, which makes {left} in the end."),
        "I think that is right, because each step follows from the one before it.",
        f"So the answer is that {name} has {left} {item} now.",
    ]
    return question + steps


def reasoning_prompt(rng: random.Random, n_words: int) -> str:
    parts: list[str] = []
    count = 0
    while count < n_words:
        sentences = _problem(rng)
        parts.extend(sentences)
        count += sum(word_count(s) for s in sentences)
    return _fit(parts, max(1, n_words))


@lru_cache(maxsize=None)
def shipped_text(dataset: str) -> str:
    """The text of a prompt set shipped with spectui."""
    return resources.files("spectui.data.prompts").joinpath(SHIPPED[dataset]).read_text(encoding="utf-8")


def shipped_sha256(dataset: str) -> str:
    return hashlib.sha256(shipped_text(dataset).encode("utf-8")).hexdigest()


def shipped_prompts(dataset: str, count: int, max_words: int, seed: int) -> list[str]:
    """``count`` prompts of the shipped set ``dataset`` of at most ``max_words`` words, chosen by ``seed``."""
    where = f"spectui's {dataset} prompt set"
    try:
        candidates = prompts_from_text(shipped_text(dataset), dataset, where)
        return sample_prompts(candidates, dataset, count, seed, max_words, where)
    except DatasetFileError as exc:
        raise ValueError(str(exc)) from None


def needs_path(dataset: str) -> bool:
    """Whether ``dataset`` is read from a file the preset must name (``dataset-path``)."""
    return dataset in FILE_FORMATS and dataset not in SHIPPED


def make_prompts(dataset: str, count: int, input_len: int, seed: int) -> list[str]:
    """``count`` prompts of about ``input_len`` words from ``dataset``, fixed by ``seed``.

    For a shipped set, ``input_len`` is the most words a prompt may have.
    """
    if dataset in SHIPPED:
        return shipped_prompts(dataset, count, input_len, seed)
    if dataset not in GENERATED:
        raise ValueError(f"unknown dataset {dataset!r}: choose {', '.join(GENERATED + tuple(SHIPPED))}")
    make = random_prompt if dataset == "random" else reasoning_prompt
    rng = random.Random(f"spectui-bench:{dataset}:{seed}")
    return [make(rng, input_len) for _ in range(count)]


@dataclass(frozen=True)
class PromptSet:
    """The prompts of one run: measured ones and warm-up ones (disjoint, same shape).

    A set read from a file on the host has no prompts here: ``host_file`` says what the host's
    runner reads and samples (name, path, count, warm-up, seed, longest prompt in words).
    """

    prompts: list[str]
    warmup: list[str]
    dataset: str = "reasoning"
    host_file: dict | None = field(default=None)

    @classmethod
    def build(cls, dataset: str, count: int, input_len: int, seed: int, warmup: int = 0,
              path: str | None = None) -> "PromptSet":
        if path:
            if dataset not in FILE_FORMATS:
                raise ValueError(f"dataset {dataset!r} is generated, not read from a file: dataset-path goes with "
                                 f"{', '.join(FILE_FORMATS)}")
            return cls([], [], dataset, {"name": dataset, "path": str(path), "count": count, "warmup": warmup,
                                         "seed": seed, "max_words": input_len})
        if needs_path(dataset):
            raise ValueError(f"dataset {dataset!r} is read from a file on the host: give its dataset-path")
        everything = make_prompts(dataset, count + warmup, input_len, seed)
        # warm-up prompts come after the measured ones, so the measured prompts do not depend on it
        return cls(everything[:count], everything[count:], dataset)

    def spec_fields(self) -> dict:
        """What a run spec carries for these prompts: the prompts, or the host file to read them from,
        and ``dataset`` (the name, and the shipped file's sha256 where there is one)."""
        if self.host_file is not None:
            return {"dataset_file": dict(self.host_file),
                    "dataset": {"name": self.dataset, "path": self.host_file["path"]}}
        facts: dict = {"name": self.dataset, "prompts_sha256": prompts_sha256(self.prompts)}
        if self.dataset in SHIPPED:
            facts["sha256"] = shipped_sha256(self.dataset)
            facts["file"] = SHIPPED[self.dataset]
        return {"prompts": self.prompts, "warmup_prompts": self.warmup, "dataset": facts}
