"""Prompts generated locally: same seed, same prompts; lengths in words."""

from spectui.core.bench.datasets import PromptSet, make_prompts, word_count


def test_prompts_are_fixed_by_seed_and_sized_in_words():
    for ds in ("random", "reasoning"):
        a = make_prompts(ds, 4, 300, seed=11)
        assert a == make_prompts(ds, 4, 300, seed=11)
        assert a != make_prompts(ds, 4, 300, seed=12)
        assert len(set(a)) == 4
        assert all(word_count(p) == 300 for p in a)


def test_reasoning_prompts_read_like_reasoning():
    (p,) = make_prompts("reasoning", 1, 400, seed=1)
    assert p.startswith("Question:")
    assert "step" in p and any(w in p for w in ("check", "verify", "sure"))
    assert any(c.isdigit() for c in p)


def test_warmup_prompts_do_not_change_measured_ones():
    a = PromptSet.build("reasoning", 5, 100, seed=3, warmup=0)
    b = PromptSet.build("reasoning", 5, 100, seed=3, warmup=2)
    assert a.prompts == b.prompts and len(b.warmup) == 2 and not set(b.warmup) & set(b.prompts)
