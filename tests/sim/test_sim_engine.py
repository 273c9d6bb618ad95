"""The target model, n-gram trie, drafter and verification, without a server."""

import asyncio

import pytest

from spectui.sim import workload
from spectui.sim.engine.drafter import Drafter, default_agreement
from spectui.sim.engine.ngram import NgramCache, verify_tree
from spectui.sim.engine.request import Request, SamplingParams
from spectui.sim.engine.speculation import SpecConfig, make_speculator
from spectui.sim.model import EOS_ID, get_model


@pytest.fixture(autouse=True)
def _loop():
    # Request objects hold asyncio events; give each test an event loop of its own.
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield
    loop.close()
    asyncio.set_event_loop(None)


def generate(model, speculator, prompt_ids, n, seed=None, ignore_eos=True, temperature=0.0, **knobs):
    r = Request(list(prompt_ids), SamplingParams(max_new_tokens=n, ignore_eos=ignore_eos, seed=seed,
                                                 temperature=temperature, **knobs))
    r.start(model, 0)
    speculator.on_prefill(r, r.commit(1, model.vocab))
    while not r.finished:
        _, correct = speculator.step(r)
        r.record_verify(correct)
    return r


def test_tokenizer_round_trips_text():
    m = get_model()
    text = "Alice was beginning to get very tired of sitting by her sister on the bank, and 'Oh dear!'\n\nA zebra?"
    assert m.vocab.decode(m.vocab.encode(text)) == text
    assert m.vocab.encode("Alice Alice") == m.vocab.encode("Alice Alice")


def test_greedy_repeats_sampling_varies_a_seed_repeats():
    m = get_model()
    ids = m.vocab.encode(workload.text_prompt(m, 1))
    plain = make_speculator(m, SpecConfig())
    greedy = [generate(m, plain, ids, 60).output_ids for _ in range(2)]
    assert greedy[0] == greedy[1]  # temperature 0: the same prompt, the same answer
    assert generate(m, plain, ids, 60, top_k=1, temperature=0.8).output_ids == greedy[0]  # top_k 1 is greedy too
    sampled = [generate(m, plain, ids, 60, temperature=0.7).output_ids for _ in range(3)]
    assert len({tuple(o) for o in sampled}) == 3  # no sampling_seed: a fresh draw each time
    seeded = [generate(m, plain, ids, 60, seed=12345, temperature=0.7).output_ids for _ in range(2)]
    assert seeded[0] == seeded[1]
    assert generate(m, plain, ids, 60, seed=54321, temperature=0.7).output_ids != seeded[0]
    assert seeded[0] != greedy[0]


def _repeat_share(model, temperature, n=40):
    """How often the model says again what it said before in this request (2-gram repeats)."""
    plain = make_speculator(model, SpecConfig())
    same = total = 0
    for seed in range(n):
        out = generate(model, plain, model.vocab.encode(workload.text_prompt(model, seed, 60)), 120, seed=seed,
                       temperature=temperature).output_ids
        pairs = list(zip(out, out[1:]))
        same += len(pairs) - len(set(pairs))
        total += len(pairs)
    return same / total


def test_a_lower_temperature_gives_more_predictable_text():
    m = get_model()
    assert _repeat_share(m, 0.3) > _repeat_share(m, 1.0) * 1.2


@pytest.mark.parametrize("temperature,seed", [(0.0, None), (0.7, 5), (1.0, 9)])
def test_speculation_never_changes_the_output(temperature, seed):
    m = get_model()
    ids = m.vocab.encode(workload.repetitive_prompt(m, 2))
    knobs = dict(seed=seed, temperature=temperature)
    plain = generate(m, make_speculator(m, SpecConfig()), ids, 120, **knobs).output_ids
    ngram = generate(m, make_speculator(m, SpecConfig(algorithm="NGRAM", num_draft_tokens=8)), ids, 120, **knobs)
    eagle = generate(m, make_speculator(m, SpecConfig(algorithm="EAGLE3", num_steps=4, eagle_topk=4,
                                                      num_draft_tokens=12, agreement=0.7)), ids, 120, **knobs)
    assert ngram.output_ids == plain
    assert eagle.output_ids == plain
    # ...while speculation did accept drafts
    assert ngram.correct_drafts > 0 and eagle.correct_drafts > 0
    assert ngram.verify_ct < 120 and sum(ngram.histogram) == ngram.verify_ct


def test_text_likeness_separates_text_from_token_soup():
    m = get_model()
    assert m.text_likeness(m.vocab.encode(workload.text_prompt(m, 3))) > 0.9
    assert m.text_likeness(m.vocab.encode(workload.random_prompt(m, 3))) < 0.2


def test_eos_ends_a_request_unless_ignored():
    m = get_model()
    plain = make_speculator(m, SpecConfig())
    ids = m.vocab.encode(workload.text_prompt(m, 4))
    r = generate(m, plain, ids, 3000, ignore_eos=False, seed=3, temperature=1.0)
    assert r.finish_reason == {"type": "stop", "matched": EOS_ID}
    assert r.output_ids[-1] == EOS_ID and EOS_ID not in r.output_ids[:-1]
    r = generate(m, plain, ids, 300, ignore_eos=True, seed=3, temperature=1.0)
    assert r.finish_reason == {"type": "length", "length": 300} and EOS_ID not in r.output_ids


def _draft(cache, stream, seq):
    return cache.draft(stream, seq[-cache.depth:], len(seq))


def test_ngram_trie_drafts_a_seen_continuation():
    c = NgramCache(max_trie_depth=6, num_draft_tokens=5, max_bfs_breadth=4)
    s = c.new_stream()
    c.insert([1, 2, 3, 4, 5, 6])
    tree = _draft(c, s, [9, 9, 1, 2, 3])
    # the longest match (1, 2, 3) is followed by 4, 5, 6: a chain comes first
    assert tree.tokens[1:4] == [4, 5, 6]
    assert len(tree) == 4
    truth = [4, 5, 6, 7, 8]
    assert verify_tree(tree, lambda k: truth[k]) == 3
    assert verify_tree(tree, lambda k: [5, 0][k]) == 0


def test_ngram_bfs_is_wide_for_short_matches():
    c = NgramCache(max_trie_depth=18, num_draft_tokens=8, max_bfs_breadth=10)
    c.insert([7, 1, 7, 2, 7, 3, 7, 4, 7, 5, 8])
    tree = _draft(c, c.new_stream(), [9, 7])
    first_level = [tree.tokens[i] for i in range(1, len(tree.tokens)) if tree.parents[i] == 0]
    assert sorted(first_level[:5]) == [1, 2, 3, 4, 5]
    assert first_level[0] == 5  # most recent continuation first


def test_ngram_inserts_the_tail_not_the_prompt():
    """0.5.23: nothing at prefill; after each verify step the request's last max_trie_depth tokens."""
    m = get_model()
    spec = make_speculator(m, SpecConfig(algorithm="NGRAM", num_draft_tokens=8, ngram_max_trie_depth=18))
    prompt = list(range(1, 101))
    r = Request(prompt, SamplingParams(max_new_tokens=2, ignore_eos=True, temperature=0.0))
    r.start(m, 0)
    spec.on_prefill(r, r.commit(1, m.vocab))
    assert spec.cache.nodes == 0  # the prompt is not inserted at prefill
    spec.step(r)
    # one tail of 18 tokens (17 from the prompt, the first output token): runs of length 18, 17, ... 1
    assert spec.cache.nodes == sum(range(1, 19))
    assert spec.cache._walk(prompt[:5]) is None  # the head of the prompt never entered the trie
    assert spec.cache._walk(prompt[-17:]) is not None


def test_ngram_capacity_evicts_the_least_recently_used():
    c = NgramCache(max_trie_depth=4, capacity=1000, num_draft_tokens=4)
    c.insert(list(range(100, 600)))  # 500 runs of 4 nodes: far more than the pool holds
    assert c.nodes <= 999 and c.evicted > 0 and c.resets == 0
    assert c._walk([597, 598, 599]) is not None  # the newest runs are kept ...
    assert c._walk([100, 101]) is None  # ... the oldest were evicted
    assert _draft(c, c.new_stream(), [1, 596, 597]).tokens[1] == 598


def test_ngram_2025_matches_windows_from_the_root():
    c = NgramCache(max_trie_depth=18, num_draft_tokens=8, max_match_window=12, era="2025")
    c.insert([1, 2, 3, 4, 5, 6, 7])
    assert c.max_window == 12 and c.scale == pytest.approx(9 / 12)
    tree = _draft(c, c.new_stream(), [8, 2, 3])
    assert tree.tokens[1:5] == [4, 5, 6, 7]


def test_drafter_shape_chain_and_tree():
    m = get_model()
    chain = Drafter(m, num_steps=3, topk=1, num_draft_tokens=4, agreement=0.6)
    assert chain.size == 3 and chain.depth[1:] == [1, 2, 3]
    tree = Drafter(m, num_steps=4, topk=4, num_draft_tokens=16, agreement=0.6)
    assert tree.size == 15
    assert max(tree.depth) <= 4
    assert sum(1 for i in range(1, tree.size + 1) if tree.parent[i] == 0) <= 4


def test_drafter_agreement_decays_with_depth():
    m = get_model()
    d = Drafter(m, num_steps=3, topk=1, num_draft_tokens=4, agreement=0.6, decay=0.8)
    hits = [0, 0, 0]
    n = 4000
    for pos in range(n):
        for depth in (1, 2, 3):
            if d.sample_rank(depth, seed=7, pos=pos * 10 + depth) == 1:
                hits[depth - 1] += 1
    rates = [h / n for h in hits]
    assert rates[0] == pytest.approx(0.6, abs=0.03)
    assert rates[1] == pytest.approx(0.48, abs=0.03)
    assert rates[2] == pytest.approx(0.384, abs=0.03)


def test_default_agreement_follows_the_draft_model_path():
    matched = default_agreement("EAGLE3", "moonshotai/Kimi-K2.5", "lightseekorg/kimi-k2.5-eagle3")
    related = default_agreement("EAGLE3", "moonshotai/Kimi-K2.5", "lightseekorg/kimi-k2-eagle3")
    unrelated = default_agreement("EAGLE3", "moonshotai/Kimi-K2.5", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B")
    assert matched > related > unrelated


@pytest.mark.parametrize("kind,low,high", [("repetitive", 2.5, 9.0), ("random", 1.0, 1.15)])
def test_workload_moves_ngram_acceptance(kind, low, high):
    m = get_model()
    spec = make_speculator(m, SpecConfig(algorithm="NGRAM", num_draft_tokens=8))
    tokens = verifies = 0
    for prompt in workload.prompts(kind, 4, 200, seed=21, model=m):
        r = generate(m, spec, m.vocab.encode(prompt), 150)
        tokens += len(r.output_ids)
        verifies += r.verify_ct
    assert low <= tokens / verifies <= high
