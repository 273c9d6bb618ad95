"""Loading profiles: YAML with marks, schema errors, extends, discovery and the Profile itself."""

from __future__ import annotations

import hashlib
import json
import textwrap
from pathlib import Path

import pytest

from spectui.core.profiles import (
    PROFILES_PATH_ENV,
    Profile,
    ProfileError,
    ProfileLayer,
    build_argv,
    default_layers,
    format_command,
    load_profile,
    load_profiles,
    shipped_profile_dirs,
)

REPO_PROFILES = Path(__file__).resolve().parents[2] / "spectui" / "data" / "profiles"
SECRET = "sk-live-3f9a8b7c6d5e4f30"


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text))
    return path


def load(folder: Path, *more: Path):
    return load_profiles(layers=[ProfileLayer("test", (folder, *more))])


def only_error(library) -> ProfileError:
    assert len(library.errors) == 1, [str(e) for e in library.errors]
    return library.errors[0]


# -- syntax and schema errors -----------------------------------------------------------------


def test_broken_yaml_names_file_line_column(tmp_path):
    path = write(tmp_path, "broken.yaml", """\
        name: broken
        model: org/m
        args:
          tp-size: 8
           bad: 1
        """)
    err = only_error(load(tmp_path))
    assert (err.path, err.line, err.column) == (str(path), 5, 7)
    text = str(err)
    assert text.startswith(f"{path}:5:7: invalid YAML: mapping values are not allowed here")
    assert "\n" not in text


def test_broken_yaml_never_quotes_the_source_line(tmp_path):
    write(tmp_path, "leaky.yaml", f"""\
        model: org/m
        env:
          TOKEN: "{SECRET}
        """)
    err = only_error(load(tmp_path))
    assert err.line == 4 and "invalid YAML" in str(err)
    assert SECRET not in str(err) and SECRET not in repr(err) and SECRET not in json.dumps(err.to_dict())


def test_misspelt_key_did_you_mean(tmp_path):
    path = write(tmp_path, "typo.yaml", """\
        name: typo
        model: org/m
        descripton: a typo
        """)
    err = only_error(load(tmp_path))
    assert (err.line, err.column, err.field) == (3, 1, "descripton")
    assert err.suggestions == ["description"]
    assert str(err) == f"{path}:3:1: unknown field 'descripton'; did you mean 'description'?"


def test_sglang_flag_at_top_level_points_to_args(tmp_path):
    write(tmp_path, "flag.yaml", "model: org/m\nspeculative-num-steps: 3\n")
    err = only_error(load(tmp_path))
    assert err.line == 2 and "go under 'args:'" in str(err)


@pytest.mark.parametrize(
    "line, field, expect",
    [
        ("port: \"30000\"", "port", "did you mean 30000 (without quotes)?"),
        ("port: 70000", "port", "between 1 and 65535"),
        ("tags: fast", "tags", "did you mean 'tags: [fast]'?"),
        ("metrics: \"no\"", "metrics", "did you mean false (without quotes)?"),
        ("args: --tp-size 8 --trust-remote-code", "args",
         "did you mean 'args: {tp-size: 8, trust-remote-code: true}'?"),
        ("gpus: [0, a]", "gpus", "must be GPU indexes"),
        ("launcher: 5", "launcher", "must be a string"),
        ("python: 3.11", "python", "did you mean '\"3.11\"' (quoted)?"),
        ("extends: [a, b]", "extends", "names one profile, not a list"),
        ("sim: fast", "sim", "must be a map"),
    ],
)
def test_wrong_types(tmp_path, line, field, expect):
    path = write(tmp_path, "p.yaml", f"name: p\nmodel: org/m\n{line}\n")
    err = only_error(load(tmp_path))
    assert err.field == field
    assert err.line == 3 and err.column == len(field) + 3
    assert str(err).startswith(f"{path}:3:{len(field) + 3}: ")
    assert expect in str(err)


def test_args_key_mistakes(tmp_path):
    write(tmp_path, "p.yaml", """\
        model: org/m
        args:
          tp_size: 2
          --mem-fraction-static: 0.8
          port: 1234
          speculative-num-steps: [1, true]
        sim:
          sim-hardware: pcie-8gpu
        """)
    errors = {(e.line, e.column): e for e in load(tmp_path).errors}
    assert set(errors) == {(3, 3), (4, 3), (5, 3), (6, 30), (8, 3)}
    assert errors[(3, 3)].suggestions == ["tp-size"]
    assert errors[(4, 3)].suggestions == ["mem-fraction-static"]
    assert "set the top-level field 'port'" in str(errors[(5, 3)])
    assert errors[(8, 3)].suggestions == ["hardware"]


def test_duplicate_key(tmp_path):
    write(tmp_path, "dup.yaml", "model: a\nport: 1\nmodel: b\n")
    err = only_error(load(tmp_path))
    assert (err.line, err.column) == (3, 1) and "appears twice" in str(err) and "line 1" in str(err)


def test_not_a_map_and_empty(tmp_path):
    write(tmp_path, "list.yaml", "- a\n- b\n")
    write(tmp_path, "empty.yaml", "# nothing here\n")
    errors = load(tmp_path).errors
    assert [(Path(e.path).name, e.line) for e in errors] == [("empty.yaml", None), ("list.yaml", 1)]
    assert all("a profile" in str(e) for e in errors)


def test_missing_model(tmp_path):
    path = write(tmp_path, "nomodel.yaml", "name: nomodel\nargs: {tp-size: 2}\n")
    err = only_error(load(tmp_path))
    assert err.field == "model" and err.path == str(path) and "has no model" in str(err)


def test_errors_from_many_files_are_all_collected(tmp_path):
    write(tmp_path, "a.yaml", "model: org/m\nprot: 1\n")
    write(tmp_path, "b.yaml", "model: [x\n")
    write(tmp_path, "c.yaml", "model: org/m\ntags: x\nmetrics: maybe\n")
    write(tmp_path, "good.yaml", "model: org/m\n")
    library = load(tmp_path)
    assert [(Path(e.path).name, e.line) for e in library.errors] == [
        ("a.yaml", 2), ("b.yaml", 2), ("c.yaml", 2), ("c.yaml", 3)]
    assert library.names() == ["good"]


# -- extends ----------------------------------------------------------------------------------


def test_extends_cycle_reported_with_chain(tmp_path):
    write(tmp_path, "a.yaml", "model: org/m\nextends: b\n")
    write(tmp_path, "b.yaml", "extends: c\n")
    write(tmp_path, "c.yaml", "extends: a\n")
    write(tmp_path, "d.yaml", "extends: a\n")
    library = load(tmp_path)
    by_file = {Path(e.path).name: e for e in library.errors}
    assert set(by_file) == {"a.yaml", "b.yaml", "c.yaml", "d.yaml"}
    assert "extends cycle: a -> b -> c -> a" in str(by_file["a.yaml"])
    assert "extends cycle: c -> a -> b -> c" in str(by_file["c.yaml"])
    assert (by_file["a.yaml"].line, by_file["a.yaml"].column, by_file["a.yaml"].field) == (2, 10, "extends")
    assert "extends 'a', which has errors" in str(by_file["d.yaml"])
    assert len(library) == 0


def test_self_extends(tmp_path):
    write(tmp_path, "s.yaml", "model: org/m\nextends: s\n")
    assert "extends cycle: s -> s" in str(only_error(load(tmp_path)))


def test_unknown_parent_did_you_mean(tmp_path):
    write(tmp_path, "kimi-baseline.yaml", "model: moonshotai/Kimi-K2.5\n")
    path = write(tmp_path, "child.yaml", "extends: kimi-basline\n")
    err = only_error(load(tmp_path))
    assert str(err) == (f"{path}:1:10: profile 'child' extends 'kimi-basline', which is not a known "
                        "profile; did you mean 'kimi-baseline'?")


def test_extends_merges_maps_and_drops_flags(tmp_path):
    write(tmp_path, "base.yaml", """\
        model: org/m
        port: 30000
        gpus: "0-3"
        env: {A: "1", B: "2"}
        args:
          tp-size: 4
          trust-remote-code: true
          disable-radix-cache: true
        sim: {hardware: pcie-8gpu, load-time: 3}
        tags: [base]
        """)
    write(tmp_path, "child.yaml", """\
        extends: base
        description: child
        port: 30001
        env: {B: null, C: "3"}
        args:
          disable-radix-cache: false
          trust-remote-code: null
          speculative-algorithm: NGRAM
        sim: {load-time: 1}
        """)
    library = load(tmp_path)
    assert library.errors == []
    child = library.get("child")
    assert child.model == "org/m" and child.port == 30001 and child.description == "child"
    assert child.gpus == ("0", "1", "2", "3")
    assert child.env == {"A": "1", "C": "3"}
    assert child.args == {"tp-size": 4, "speculative-algorithm": "NGRAM"}
    assert child.sim == {"hardware": "pcie-8gpu", "load-time": 1}
    assert child.tags == ("base",)
    assert child.chain == ("base", "child") and child.extends == "base"
    assert child.location_of("args.tp-size").path == str(tmp_path / "base.yaml")
    assert child.location_of("args.speculative-algorithm").line == 8
    # The parent itself is unchanged.
    assert library.get("base").args["disable-radix-cache"] is True


def test_checking_one_file_that_extends_a_shipped_profile(tmp_path):
    mine = write(tmp_path, "mine.yaml", "name: mine\nextends: kimi-eagle3\nargs: {speculative-num-steps: 5}\n")
    library = load_profiles([mine], layers=[ProfileLayer("shipped", (REPO_PROFILES,))])
    assert library.errors == []
    assert library.get("mine").args["speculative-num-steps"] == 5
    assert library.get("mine").args["speculative-algorithm"] == "EAGLE3"
    assert load_profile(mine, layers=[ProfileLayer("shipped", (REPO_PROFILES,))]).name == "mine"


# -- discovery --------------------------------------------------------------------------------


def test_shipped_profiles_found_next_to_the_package(monkeypatch):
    monkeypatch.delenv(PROFILES_PATH_ENV, raising=False)
    assert shipped_profile_dirs() == [REPO_PROFILES]


def test_env_var_and_user_override(monkeypatch, tmp_path):
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    write(shipped, "one.yaml", "model: org/shipped\ndescription: shipped one\n")
    write(shipped, "two.yaml", "model: org/two\n")
    config = tmp_path / "config"
    user = config / "spectui" / "profiles"
    user.mkdir(parents=True)
    write(user, "mine.yml", "name: one\nmodel: org/mine\n")
    monkeypatch.setenv(PROFILES_PATH_ENV, str(shipped))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    assert [layer.dirs for layer in default_layers()] == [(shipped,), (user,)]
    library = load_profiles()
    assert library.errors == [] and library.names() == ["one", "two"]
    assert library.get("one").model == "org/mine" and library.get("one").description == ""
    assert library.shadowed == {"one": [str(shipped / "one.yaml")]}


def test_same_name_twice_in_one_layer(tmp_path):
    write(tmp_path, "a.yaml", "name: same\nmodel: org/a\n")
    path = write(tmp_path, "b.yaml", "name: same\nmodel: org/b\n")
    err = only_error(load(tmp_path))
    assert err.path == str(path) and err.line == 1 and "already used by" in str(err)


def test_get_unknown_profile(tmp_path):
    write(tmp_path, "kimi-eagle3.yaml", "model: org/m\n")
    with pytest.raises(ProfileError) as info:
        load(tmp_path).get("kimi-eagle")
    assert info.value.suggestions == ["kimi-eagle3"] and "did you mean 'kimi-eagle3'" in str(info.value)


# -- the Profile: secrets and identity --------------------------------------------------------


def test_secret_env_value_never_shown(tmp_path):
    write(tmp_path, "s.yaml", f"""\
        model: org/m
        env:
          API_KEY: {SECRET}
          FROM_HOST: ${{HF_TOKEN}}
        args:
          tp-size: 1
        """)
    write(tmp_path, "bad-child.yaml", "extends: s\nenv:\n  FLAG: true\nports: 1\n")
    library = load(tmp_path)
    profile = library.get("s")
    assert profile.env["API_KEY"] == SECRET  # the value itself is kept for launching
    shown = [repr(profile), str(profile), json.dumps(profile.redacted()), json.dumps(profile.to_dict()),
             repr(library), format_command(build_argv(profile, simulated=False)),
             format_command(build_argv(profile, simulated=True))]
    shown += [str(e) for e in library.errors] + [repr(e) for e in library.errors]
    assert len(library.errors) == 2
    for text in shown:
        assert SECRET not in text
    assert profile.redacted()["env"] == {"API_KEY": "<redacted>", "FROM_HOST": "<redacted>"}


def test_content_hash(tmp_path):
    for sub in "abc":
        (tmp_path / sub).mkdir()
    a = write(tmp_path / "a", "p.yaml", "model: org/m\nargs: {tp-size: 8, trust-remote-code: true}\n")
    b = write(tmp_path / "b", "p.yaml", "# same server\nargs: {trust-remote-code: true, tp-size: 8}\n"
              "description: other words\ntags: [x]\nmodel: org/m\n")
    c = write(tmp_path / "c", "p.yaml", "model: org/m\nargs: {tp-size: 4, trust-remote-code: true}\n")
    pa, pb, pc = (load_profile(p, layers=[]) for p in (a, b, c))
    assert pa.content_hash == pb.content_hash != pc.content_hash
    canonical = json.dumps(pa.launch_spec(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert pa.content_hash == hashlib.sha256(canonical.encode()).hexdigest()
    assert load_profile(a, layers=[]).content_hash == pa.content_hash
    assert pa != pb  # labels differ, even though the server would be the same
    assert isinstance(hash(pa), int)


def test_shipped_profiles_tell_the_story():
    library = load_profiles(layers=[ProfileLayer("shipped", (REPO_PROFILES,))])
    assert library.errors == []
    names = set(library.names())
    assert {"kimi-baseline", "kimi-eagle3", "kimi-ngram", "kimi-k2-drafter"} <= names
    kimi = [library.get(n) for n in ("kimi-baseline", "kimi-eagle3", "kimi-ngram", "kimi-k2-drafter")]
    for p in kimi:
        assert p.model == "moonshotai/Kimi-K2.5" and p.args["tp-size"] == 8
        assert p.sim["hardware"] == "pcie-8gpu" and p.sim["load-time"] <= 10
        assert p.chain[0] == "kimi-baseline"
    base, eagle, ngram, k2 = kimi
    assert base.algorithm is None
    assert eagle.speculative_settings() == {"algorithm": "EAGLE3", "num_steps": 3, "topk": 1, "draft_tokens": 4,
                                            "draft_model": "lightseekorg/kimi-k2.5-eagle3"}
    assert ngram.algorithm == "NGRAM" and ngram.args["speculative-num-draft-tokens"] == 8
    assert k2.algorithm == "EAGLE3" and "K2-" in k2.args["speculative-draft-model-path"]
    assert k2.sim["draft-agreement"] < eagle.sim["draft-agreement"]
    small = [p for p in library if p.args.get("tp-size") == 1 and p.algorithm == "EAGLE3"]
    assert small and small[0].args.get("speculative-draft-model-path")


def test_profile_is_plain_data():
    p = Profile(name="x", model="org/m")
    assert p.launcher == ("-m", "sglang.launch_server") and p.metrics and p.port == 30000
    assert str(p) == "x (org/m, no speculation)"


@pytest.mark.parametrize("stem", ["bad name;rm", "-dash-first", "$(reboot)", "x\x1b[2J"])
def test_a_name_taken_from_the_file_name_is_held_to_the_name_rule(tmp_path, stem):
    write(tmp_path, stem + ".yaml", "model: m\n")
    lib = load(tmp_path)
    assert stem not in lib.profiles
    err = only_error(lib)
    assert err.line == 1 and err.field == "name" and "rename the file or set 'name'" in str(err)


def test_a_valid_name_field_rescues_an_odd_file_name(tmp_path):
    write(tmp_path, "odd name.yaml", "name: fine-name\nmodel: m\n")
    lib = load(tmp_path)
    assert lib.ok and "fine-name" in lib.profiles
